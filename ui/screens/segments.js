// segments.js - screen 5: segments (list, create, edit conditions).
import { h, fill, field, errorSlot, showError } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';
import { conditionEditor, attributePaths } from '../lib/conditions.js';

export default async function segmentsScreen(main, ctx) {
  const base = path`/v1/orgs/${state.org}/segments`;
  const listBox = h('div');
  const error = errorSlot();
  let attributes = [];

  const segmentCard = (seg) => {
    const conditions = JSON.parse(JSON.stringify(seg.conditions || []));
    const conds = h('div');
    const rowError = errorSlot();
    const status = h('span', { class: 'muted', role: 'status' });
    const draw = () => fill(conds, conditions.length ? conditions.map((c, i) => conditionEditor(c, attributes, [], () => { status.textContent = 'Unsaved changes'; },
      () => { conditions.splice(i, 1); draw(); status.textContent = 'Unsaved changes'; }, i)) : h('p', { class: 'muted' }, 'No condition: matches everyone.'));
    draw();
    const save = async () => {
      try { await api.patch(`${base}/${encodeURIComponent(seg.key)}`, { conditions }); status.textContent = 'Saved'; showError(rowError, null); } catch (err) { showError(rowError, err); }
    };
    const remove = async () => {
      if (!(await confirmDialog(`Delete segment ${seg.key}?`, 'Rules that use it must be changed first.'))) return;
      try { await api.del(`${base}/${encodeURIComponent(seg.key)}`); await load(); } catch (err) { showError(rowError, err); }
    };
    return h('div', { class: 'card', role: 'group', 'aria-label': `Segment ${seg.key}` },
      h('div', { class: 'row' }, h('strong', null, seg.key), h('span', null, seg.name), seg.description ? h('span', { class: 'muted' }, seg.description) : null),
      h('p', { class: 'muted' }, (seg.usedBy || []).length ? 'Used by the rules of ' : 'No flag\u2019s rule uses it.',
        (seg.usedBy || []).map((key, i) => [i ? ', ' : '', h('a', { href: `#/flags/${encodeURIComponent(key)}` }, key)])),
      conds,
      h('div', { class: 'row' },
        h('button', { type: 'button', onclick: () => { conditions.push({ attribute: '', operator: 'eq', values: [] }); draw(); } }, 'Add condition'),
        h('button', { type: 'button', class: 'primary', onclick: save, 'aria-label': `Save segment ${seg.key}` }, 'Save'),
        h('button', { type: 'button', class: 'danger', onclick: remove, 'aria-label': `Delete segment ${seg.key}` }, 'Delete'), status),
      rowError);
  };

  const load = async () => {
    try {
      const [segs, ents] = await Promise.all([api.get(base), api.get(path`/v1/orgs/${state.org}/entities`).catch(() => ({ entities: [] }))]);
      if (!ctx.isCurrent()) return;
      attributes = attributePaths(ents.entities);
      fill(listBox, segs.segments.length ? segs.segments.map(segmentCard) : h('p', { class: 'muted' }, 'No segment yet.'));
      showError(error, null);
    } catch (err) { showError(error, err); }
  };

  const key = h('input', { type: 'text', required: true });
  const name = h('input', { type: 'text', required: true });
  const formError = errorSlot();
  const form = h('form', { class: 'card', 'aria-label': 'New segment' },
    h('div', { class: 'row' }, field('Segment key', key), field('Segment name', name)), formError,
    h('button', { type: 'submit', class: 'primary' }, 'Create segment'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try { await api.post(base, { key: key.value.trim(), name: name.value.trim() || key.value.trim() }); key.value = ''; name.value = ''; showError(formError, null); await load(); } catch (err) { showError(formError, err); }
  });
  fill(main, h('h1', null, 'Segments'), form, error, listBox);
  await load();
}
