// unknown.js - screen 11: keys SDKs ask for that do not exist (create
// them) and stale flags (archive them).
import { h, fill, errorSlot, showError, ago } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';

export default async function unknownScreen(main, ctx) {
  const unknownBox = h('div');
  const staleBox = h('div');

  const loadUnknown = async () => {
    const error = errorSlot();
    try {
      const data = await api.get(path`/v1/orgs/${state.org}/unknown-flags`);
      if (!ctx.isCurrent()) return;
      fill(unknownBox, data.flags.length ? h('table', { class: 'list' },
        h('thead', null, h('tr', null, ['Key', 'Environment', 'Asked', 'Last asked', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, data.flags.map((f) => {
          const rowError = errorSlot();
          const create = async () => {
            try { await api.post(path`/v1/orgs/${state.org}/flags`, { slug: f.key, type: 'boolean' }); ctx.navigate(`#/flags/${encodeURIComponent(f.key)}`); } catch (err) { showError(rowError, err); }
          };
          return h('tr', null, h('td', null, h('code', null, f.key)), h('td', null, f.environment), h('td', null, String(f.count)), h('td', null, ago(f.lastSeenAt)),
            h('td', null, h('button', { type: 'button', onclick: create, 'aria-label': `Create flag ${f.key}` }, 'Create'), rowError));
        }))) : h('p', { class: 'muted' }, 'No SDK asked for a key that does not exist.'), error);
    } catch (err) { fill(unknownBox, error); showError(error, err); }
  };

  const loadStale = async () => {
    const error = errorSlot();
    try {
      const page = await api.getPage(`${path`/v1/orgs/${state.org}/flags`}?stale=true`);
      if (!ctx.isCurrent()) return;
      const flags = page.data.flags.filter((f) => f.stale);
      // The list answers at most 1,000 flags: those archived here leave it, the next take their place.
      const more = page.next ? h('p', { class: 'muted', role: 'status' },
        `The first ${flags.length} stale flags by key; more remain after them.`) : null;
      fill(staleBox, flags.length ? h('table', { class: 'list' },
        h('thead', null, h('tr', null, ['Flag', 'Why', 'Since', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, flags.map((f) => {
          const rowError = errorSlot();
          const archive = async () => {
            if (!(await confirmDialog(`Archive ${f.key}?`, 'It keeps evaluating until it is deleted; it leaves the flag list.'))) return;
            try { await api.post(path`/v1/orgs/${state.org}/flags/${f.key}/archive`, {}); await loadStale(); } catch (err) { showError(rowError, err); }
          };
          return h('tr', null, h('td', null, h('a', { href: `#/flags/${encodeURIComponent(f.key)}` }, f.key)),
            h('td', null, String(f.stale.reason).replace(/_/g, ' ')), h('td', null, ago(f.stale.since)),
            h('td', null, h('button', { type: 'button', onclick: archive, 'aria-label': `Archive ${f.key}` }, 'Archive'), rowError));
        }))) : h('p', { class: 'muted' }, 'No stale flag.'), more, error);
    } catch (err) { fill(staleBox, error); showError(error, err); }
  };

  fill(main, h('h1', null, 'Unknown and stale flags'), h('h2', null, 'Keys asked for that do not exist'), unknownBox, h('h2', null, 'Stale flags'), staleBox);
  await Promise.all([loadUnknown(), loadStale()]);
}
