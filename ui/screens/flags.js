// flags.js - screen 2: the flags of the organization for the chosen
// environment. One request for the list (GET /v1/orgs/{org}/flags; its
// items say in which environments each flag is on), search and filters in
// the page, a switch per row (production asks first), "New flag".
// An organization of more than 1,000 flags answers its first 1,000 and a
// Link: then "Load more" follows the Link, and the search also asks the
// server (q), so a flag not loaded yet is found (doc/api.md).
import { h, fill, field, errorSlot, showError, ago, sparkline } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';

const TYPES = ['boolean', 'string', 'number', 'json'];

export async function toggleFlag(flag, on, errorEl) {
  if (state.env === 'production') {
    const ok = await confirmDialog(`Turn ${on ? 'on' : 'off'} in production?`,
      `${flag.key} will ${on ? 'start' : 'stop'} serving its targeting to production traffic at once.`);
    if (!ok) return false;
  }
  try {
    await api.patch(path`/v1/orgs/${state.org}/flags/${flag.key}/environments/${state.env}`, { enabled: on });
    showError(errorEl, null);
    return true;
  } catch (err) {
    showError(errorEl, err);
    return false;
  }
}

function newFlagForm(ctx, onCreated) {
  const key = h('input', { type: 'text', name: 'key', required: true, pattern: '[a-z0-9]([a-z0-9-]*[a-z0-9])?', autocomplete: 'off' });
  const type = h('select', { name: 'type' }, TYPES.map((t) => h('option', { value: t }, t)));
  const description = h('input', { type: 'text', name: 'description' });
  const error = errorSlot();
  const form = h('form', { class: 'card inline-form', 'aria-label': 'New flag' },
    h('h2', null, 'New flag'),
    h('div', { class: 'row' }, field('Key', key, 'lowercase letters, digits and dashes'), field('Type', type), field('Description', description)),
    error,
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Create'),
      h('button', { type: 'button', onclick: () => form.remove() }, 'Cancel')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const body = { slug: key.value.trim(), type: type.value };
      if (description.value.trim()) body.description = description.value.trim();
      const data = await api.post(path`/v1/orgs/${state.org}/flags`, body);
      form.remove();
      onCreated(data.flag);
    } catch (err) {
      showError(error, err);
    }
  });
  setTimeout(() => key.focus(), 0);
  return form;
}

function flagRow(flag, onToggled) {
  const on = (flag.enabledIn || []).includes(state.env);
  const error = errorSlot();
  const toggle = h('button', {
    type: 'button', role: 'switch', class: 'switch', 'aria-checked': on ? 'true' : 'false',
    'aria-label': `Enabled: ${flag.key}`,
  }, h('span', { class: 'knob', 'aria-hidden': 'true' }), on ? 'On' : 'Off');
  toggle.addEventListener('click', async () => {
    toggle.disabled = true;
    const next = toggle.getAttribute('aria-checked') !== 'true';
    if (await toggleFlag(flag, next, error)) {
      const list = new Set(flag.enabledIn || []);
      if (next) list.add(state.env); else list.delete(state.env);
      flag.enabledIn = [...list];
      toggle.setAttribute('aria-checked', next ? 'true' : 'false');
      toggle.lastChild.textContent = next ? 'On' : 'Off';
      onToggled();
    }
    toggle.disabled = false;
    toggle.focus();
  });
  const usage = flag.usage || {};
  const series = Array.isArray(flag.week) ? flag.week : [];
  return h('tr', { 'data-key': flag.key },
    h('td', null, toggle),
    h('td', null, h('a', { href: `#/flags/${encodeURIComponent(flag.key)}` }, flag.key),
      flag.name && flag.name !== flag.key ? h('div', { class: 'muted' }, flag.name) : null,
      flag.description ? h('div', { class: 'muted description' }, flag.description) : null, error),
    h('td', null, flag.type),
    h('td', null, (flag.tags || []).map((t) => h('span', { class: 'tag' }, t))),
    h('td', null, ago(usage.lastSeenAt)),
    h('td', null, series.length ? sparkline(series, `Evaluations of ${flag.key} per day, last 7 days`) : h('span', { class: 'muted' }, '—')),
    h('td', null, flag.stale ? h('span', { class: 'badge warn', title: flag.stale.since || '' }, `stale: ${String(flag.stale.reason).replace(/_/g, ' ')}`) : null,
      flag.archivedAt ? h('span', { class: 'badge' }, 'archived') : null));
}

export default async function flagsScreen(main, ctx) {
  const search = h('input', { type: 'search', 'aria-label': 'Search flags', placeholder: 'Search by key, name or tag' });
  const enabled = h('select', { 'aria-label': 'Enabled filter' },
    h('option', { value: '' }, 'on or off'), h('option', { value: 'on' }, 'on'), h('option', { value: 'off' }, 'off'));
  const type = h('select', { 'aria-label': 'Type filter' }, h('option', { value: '' }, 'any type'), TYPES.map((t) => h('option', { value: t }, t)));
  const tag = h('select', { 'aria-label': 'Tag filter' }, h('option', { value: '' }, 'any tag'));
  const stale = h('input', { type: 'checkbox', 'aria-label': 'Stale only' });
  const archived = h('input', { type: 'checkbox', 'aria-label': 'Archived' });
  const error = errorSlot();
  const formSlot = h('div');
  const count = h('p', { class: 'muted', role: 'status' });
  const tbody = h('tbody');
  const newButton = h('button', { type: 'button', class: 'primary', onclick: () => openNew() }, 'New flag');
  const more = h('button', { type: 'button', hidden: true, onclick: () => loadMore() }, 'Load more');
  let flags = [];
  let next = null; // the Link of the last page loaded, or null when every flag is here
  let paged = false; // the organization's list pages: search asks the server too
  let serverQ = ''; // the q of the pages loaded
  let perDay = new Map();

  const openNew = () => {
    if (formSlot.firstChild) { formSlot.querySelector('input').focus(); return; }
    fill(formSlot, newFlagForm(ctx, (flag) => ctx.navigate(`#/flags/${encodeURIComponent(flag.key)}`)));
  };

  const draw = () => {
    const started = performance.now();
    const q = search.value.trim().toLowerCase();
    const shown = flags.filter((f) => {
      const on = (f.enabledIn || []).includes(state.env);
      if (enabled.value === 'on' && !on) return false;
      if (enabled.value === 'off' && on) return false;
      if (type.value && f.type !== type.value) return false;
      if (tag.value && !(f.tags || []).includes(tag.value)) return false;
      if (stale.checked && !f.stale) return false;
      if (!q) return true;
      return f.key.toLowerCase().includes(q) || (f.name || '').toLowerCase().includes(q)
        || (f.tags || []).some((t) => t.toLowerCase().includes(q));
    });
    const rows = document.createDocumentFragment();
    for (const f of shown) rows.appendChild(flagRow(f, () => {}));
    tbody.replaceChildren(rows);
    count.textContent = `${shown.length} of ${flags.length}${next ? ' loaded' : ''} flags`
      + (next ? ' (more on the server: Load more, or search)' : '');
    more.hidden = !next;
    main.dataset.renderMs = String(Math.round(performance.now() - started));
  };

  const listPath = () => {
    const params = [];
    if (paged && serverQ) params.push(`q=${encodeURIComponent(serverQ)}`);
    if (archived.checked) params.push('archived=true');
    return `${path`/v1/orgs/${state.org}/flags`}${params.length ? `?${params.join('&')}` : ''}`;
  };

  const load = async () => {
    try {
      const [page, week] = await Promise.all([
        api.getPage(listPath()),
        api.get(path`/v1/orgs/${state.org}/environments/${state.env}/usage`),
      ]);
      if (!ctx.isCurrent()) return;
      const data = page.data;
      perDay = new Map(week.flags.map((f) => [f.key, f.series]));
      for (const f of data.flags) f.week = perDay.get(f.key) || null;
      next = page.next;
      if (!serverQ) paged = next !== null;
      flags = data.flags;
      state.flags = flags;
      const tags = [...new Set(flags.flatMap((f) => f.tags || []))].sort();
      const chosen = tag.value;
      fill(tag, h('option', { value: '' }, 'any tag'), tags.map((t) => h('option', { value: t, selected: t === chosen }, t)));
      showError(error, null);
      draw();
    } catch (err) {
      showError(error, err);
    }
  };

  const loadMore = async () => {
    if (!next) return;
    more.disabled = true;
    try {
      const page = await api.getPage(next);
      if (!ctx.isCurrent()) return;
      for (const f of page.data.flags) f.week = perDay.get(f.key) || null;
      flags = flags.concat(page.data.flags);
      state.flags = flags;
      next = page.next;
      showError(error, null);
      draw();
    } catch (err) {
      showError(error, err);
    } finally {
      more.disabled = false;
    }
  };

  // A large organization searches on the server too, once typing pauses.
  let searchTimer = null;
  const searchServer = () => {
    clearTimeout(searchTimer);
    if (!paged) return;
    searchTimer = setTimeout(() => {
      const q = search.value.trim();
      if (q === serverQ) return;
      serverQ = q;
      load();
    }, 300);
  };

  search.addEventListener('input', () => { draw(); searchServer(); });
  for (const el of [enabled, type, tag, stale]) el.addEventListener('change', draw);
  archived.addEventListener('change', load);

  const envName = (state.environments.find((e) => e.key === state.env) || {}).name || state.env;
  fill(main,
    h('div', { class: 'screen-head' }, h('h1', null, `Flags in ${envName}`), newButton),
    formSlot,
    h('div', { class: 'filters' }, search, enabled, type, tag,
      h('label', { class: 'check' }, stale, 'stale'), h('label', { class: 'check' }, archived, 'archived')),
    error, count,
    h('table', { class: 'list flags' },
      h('thead', null, h('tr', null, ['Enabled', 'Flag', 'Type', 'Tags', 'Last seen', '7 days', ''].map((t) => h('th', { scope: 'col' }, t)))),
      tbody),
    more);
  let timer = null;
  ctx.onChange(() => { clearTimeout(timer); timer = setTimeout(load, 100); });
  await load();
  if (ctx.query.has('new')) openNew();
}
