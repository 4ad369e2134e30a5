// history.js - screen 4: a flag's revisions newest first, each with what
// changed and "Restore this revision"; its scheduled changes (list,
// "Schedule", cancel).
import { h, fill, field, errorSlot, showError, when } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';

export default async function historyScreen(main, ctx) {
  const key = ctx.params.key;
  const base = path`/v1/orgs/${state.org}/flags/${key}`;
  const revisionsBox = h('section', { 'aria-labelledby': 'revisions-title' });
  const schedulesBox = h('section', { 'aria-labelledby': 'schedules-title' });

  const loadRevisions = async () => {
    const error = errorSlot();
    let revisions = [];
    try { revisions = (await api.get(`${base}/revisions`)).revisions; } catch (err) { showError(error, err); }
    fill(revisionsBox, h('h2', { id: 'revisions-title' }, 'Revisions'), error,
      h('ol', { class: 'revisions', reversed: true }, revisions.map((r) => {
        const rowError = errorSlot();
        const restore = async () => {
          if (!(await confirmDialog('Restore this revision?', `The targeting of ${key} goes back to how it stood after: ${r.summary || r.action}.`))) return;
          try {
            await api.post(`${base}/revisions/${encodeURIComponent(r.id)}/restore`, {});
            await loadRevisions();
          } catch (err) { showError(rowError, err); }
        };
        return h('li', { class: 'card' },
          h('div', { class: 'row' }, h('strong', null, r.summary || r.action), h('span', { class: 'muted' }, `${when(r.createdAt)} · ${r.userName || 'unknown'} · ${r.action}`)),
          r.changes && r.changes.length ? h('ul', null, r.changes.map((c) => h('li', null, c))) : null,
          h('button', { type: 'button', onclick: restore }, 'Restore this revision'), rowError);
      })));
  };

  // The form is made once: a live update redraws the list, never a
  // half-filled form.
  const listBox = h('div');
  const listError = errorSlot();
  const at = h('input', { type: 'datetime-local', required: true });
  const env = h('select', null, state.environments.map((e) => h('option', { value: e.key, selected: e.key === state.env }, e.name)));
  const action = h('select', null, h('option', { value: 'on' }, 'turn on'), h('option', { value: 'off' }, 'turn off'));
  const formError = errorSlot();
  const form = h('form', { class: 'card', 'aria-label': 'Schedule a change' },
    h('div', { class: 'row' }, field('When', at), field('In environment', env), field('Change', action)),
    formError, h('button', { type: 'submit', class: 'primary' }, 'Schedule'));

  const loadSchedules = async () => {
    let schedules = [];
    try { schedules = (await api.get(`${base}/schedules`)).schedules || []; showError(listError, null); } catch (err) { showError(listError, err); }
    if (!ctx.isCurrent()) return;
    fill(listBox, schedules.length ? h('table', { class: 'list' },
      h('thead', null, h('tr', null, ['When', 'Environment', 'Change', 'Status', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, schedules.map((s) => {
        const rowError = errorSlot();
        const cancel = async () => {
          if (!(await confirmDialog('Cancel this scheduled change?', `${JSON.stringify(s.changes)} at ${when(s.at)}`))) return;
          try { await api.del(`${base}/schedules/${encodeURIComponent(s.id)}`); await loadSchedules(); } catch (err) { showError(rowError, err); }
        };
        return h('tr', null, h('td', null, when(s.at)), h('td', null, s.environment), h('td', null, h('code', null, JSON.stringify(s.changes))),
          h('td', null, s.status, s.error ? h('div', { class: 'error' }, s.error) : null),
          h('td', null, s.status === 'pending' ? h('button', { type: 'button', onclick: cancel, 'aria-label': `Cancel schedule at ${when(s.at)}` }, 'Cancel schedule') : null, rowError));
      }))) : h('p', { class: 'muted' }, 'Nothing scheduled.'));
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const time = new Date(at.value);
    if (Number.isNaN(time.getTime())) { showError(formError, { message: 'Choose a date and time.' }); return; }
    try {
      await api.post(`${base}/schedules`, { at: time.toISOString(), environment: env.value, changes: { enabled: action.value === 'on' } });
      showError(formError, null);
      await loadSchedules();
    } catch (err) { showError(formError, err); }
  });
  fill(schedulesBox, h('h2', { id: 'schedules-title' }, 'Scheduled changes'), listError, listBox, form);

  fill(main, h('p', null, h('a', { href: `#/flags/${encodeURIComponent(key)}` }, `← ${key}`)), h('h1', null, `History of ${key}`), schedulesBox, revisionsBox);
  await Promise.all([loadRevisions(), loadSchedules()]);
  let timer = null;
  ctx.onChange(() => { clearTimeout(timer); timer = setTimeout(() => { loadRevisions(); loadSchedules(); }, 100); });
}
