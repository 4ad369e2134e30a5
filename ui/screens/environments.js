// environments.js - screen 6: each environment with its SDK keys (name,
// prefix, last four, last used); "New SDK key" shows the key once with a
// copy button; "Revoke" asks first.
import { h, fill, errorSlot, showError, ago } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';

export default async function environmentsScreen(main, ctx) {
  const base = path`/v1/orgs/${state.org}/sdk-keys`;
  const box = h('div');
  const error = errorSlot();

  const shownOnce = (created) => {
    const input = h('input', { type: 'text', readOnly: true, value: created.token, class: 'secret', 'aria-label': 'SDK key', size: 60 });
    const copied = h('span', { role: 'status', class: 'muted' });
    const copy = async () => {
      input.select();
      try { await navigator.clipboard.writeText(created.token); copied.textContent = 'Copied'; } catch { copied.textContent = 'Selected: press Ctrl-C to copy'; }
    };
    return h('div', { class: 'card', role: 'region', 'aria-label': 'New SDK key' },
      h('p', null, h('strong', null, `SDK key ${created.name}`), ' for ', created.environmentKey || '', ': shown once, copy it now.'),
      h('div', { class: 'row' }, input, h('button', { type: 'button', onclick: copy }, 'Copy'), copied));
  };

  const envSection = (env, keys) => {
    const slot = h('div');
    const rowError = errorSlot();
    const name = h('input', { type: 'text', 'aria-label': `New key name for ${env.name}`, placeholder: 'key name', value: `${env.key} key` });
    const create = async () => {
      try {
        const data = await api.post(base, { name: name.value.trim() || `${env.key} key`, environment: env.key });
        await load();
        const target = box.querySelector(`[data-env="${CSS.escape(env.key)}"] .once`);
        if (target) { fill(target, shownOnce(data.key)); target.querySelector('input').focus(); }
      } catch (err) { showError(rowError, err); }
    };
    const rows = keys.filter((k) => k.environmentKey === env.key && !k.revokedAt).map((k) => {
      const keyError = errorSlot();
      const revoke = async () => {
        if (!(await confirmDialog(`Revoke ${k.name}?`, `Applications using ${k.masked} stop evaluating at once.`))) return;
        try { await api.post(`${base}/${encodeURIComponent(k.id)}/revoke`, {}); await load(); } catch (err) { showError(keyError, err); }
      };
      return h('tr', null, h('td', null, k.name), h('td', null, h('code', null, k.prefix)), h('td', null, h('code', null, k.lastFour)),
        h('td', null, ago(k.lastUsedAt)), h('td', null, h('button', { type: 'button', class: 'danger', onclick: revoke }, 'Revoke'), keyError));
    });
    slot.className = 'once';
    return h('section', { class: 'card', 'data-env': env.key, 'aria-label': env.name },
      h('h2', null, env.name, ' ', h('code', null, env.key)),
      rows.length ? h('table', { class: 'list' }, h('thead', null, h('tr', null, ['Name', 'Prefix', 'Last four', 'Last used', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', null, rows))
        : h('p', { class: 'muted' }, 'No SDK key.'),
      h('div', { class: 'row' }, name, h('button', { type: 'button', class: 'primary', onclick: create }, 'New SDK key')),
      rowError, slot);
  };

  const load = async () => {
    try {
      const [envs, keys] = await Promise.all([api.get(path`/v1/orgs/${state.org}/environments`), api.get(base)]);
      if (!ctx.isCurrent()) return;
      fill(box, envs.environments.map((e) => envSection(e, keys.keys)));
      showError(error, null);
    } catch (err) { showError(error, err); }
  };
  fill(main, h('h1', null, 'Environments and SDK keys'), error, box);
  await load();
}
