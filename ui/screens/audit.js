// audit.js - screen 8: the audit log with filters (actor, action, date)
// and the hash chain's check (GET /orgs/{slug}/audit/verify): "Verified",
// or the event where it breaks.
import { h, fill, field, errorSlot, showError, when } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';

export default async function auditScreen(main, ctx) {
  const actor = h('select', null, h('option', { value: '' }, 'anyone'));
  const action = h('input', { type: 'text', placeholder: 'flag.created', list: 'audit-actions' });
  const actions = h('datalist', { id: 'audit-actions' });
  const from = h('input', { type: 'date' });
  const to = h('input', { type: 'date' });
  const error = errorSlot();
  const chain = h('p', { class: 'chain', role: 'status' }, 'Checking the chain…');
  const tbody = h('tbody');

  const load = async () => {
    const params = new URLSearchParams({ limit: '200' });
    if (actor.value) params.set('actor', actor.value);
    if (action.value.trim()) params.set('action', action.value.trim());
    try {
      const data = await api.get(`${path`/orgs/${state.org}/audit`}?${params}`);
      if (!ctx.isCurrent()) return;
      const start = from.value ? Date.parse(`${from.value}T00:00:00`) : -Infinity;
      const end = to.value ? Date.parse(`${to.value}T23:59:59.999`) : Infinity;
      const events = data.events.filter((e) => { const t = Date.parse(e.created_at); return t >= start && t <= end; });
      fill(actions, [...new Set(data.events.map((e) => e.action))].map((a) => h('option', { value: a })));
      tbody.replaceChildren(...events.map((e) => h('tr', null, h('td', null, when(e.created_at)), h('td', null, (e.actor && e.actor.name) || '—'),
        h('td', null, h('code', null, e.action)), h('td', null, e.summary), h('td', null, e.location || ''))));
      showError(error, null);
    } catch (err) { showError(error, err); }
  };

  const verify = async () => {
    try {
      const v = await api.get(path`/orgs/${state.org}/audit/verify`);
      fill(chain, v.ok ? h('span', { class: 'badge ok' }, 'Verified') : h('span', { class: 'badge bad' }, `Broken at event ${v.brokenAt}`),
        ` ${v.events} events checked`);
    } catch (err) { fill(chain, h('span', { class: 'error' }, `Chain not checked: ${err.message}`)); }
  };

  try {
    const members = await api.get(path`/orgs/${state.org}/members`);
    for (const m of members.members) actor.appendChild(h('option', { value: m.user_id }, m.name || m.email));
  } catch { /* a viewer without members:read filters by action only */ }
  for (const el of [actor, from, to]) el.addEventListener('change', load);
  action.addEventListener('change', load);
  fill(main, h('h1', null, 'Audit log'), chain,
    h('div', { class: 'filters' }, field('Actor', actor), field('Action', action), actions, field('From', from), field('To', to)),
    error, h('table', { class: 'list' }, h('thead', null, h('tr', null, ['When', 'Actor', 'Action', 'Summary', 'Where'].map((t) => h('th', { scope: 'col' }, t)))), tbody));
  await Promise.all([load(), verify()]);
  let timer = null;
  ctx.onChange(() => { clearTimeout(timer); timer = setTimeout(() => { load(); verify(); }, 100); });
}
