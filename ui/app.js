// app.js - the dashboard's shell: sign-in, the organization and
// environment switchers, navigation, hash routing to one module per
// screen (screens/), the command palette, live updates, and the guard
// that asks before leaving unsaved edits. No build step: the browser
// loads these ES modules as they are.
import { h, fill, errorSlot, showError, field } from './lib/view.js';
import * as api from './lib/api.js';
import { path } from './lib/api.js';
import { state, remember, recall } from './lib/state.js';
import { confirmDialog } from './lib/dialog.js';
import * as live from './lib/live.js';
import { openPalette } from './lib/palette.js';

const SCREENS = [
  { name: 'Flags', hash: '#/flags', module: './screens/flags.js' },
  { name: 'Segments', hash: '#/segments', module: './screens/segments.js' },
  { name: 'Environments', hash: '#/environments', module: './screens/environments.js' },
  { name: 'Playground', hash: '#/playground', module: './screens/playground.js' },
  { name: 'Audit log', hash: '#/audit', module: './screens/audit.js' },
  { name: 'Members', hash: '#/members', module: './screens/members.js' },
  { name: 'Agent', hash: '#/agent', module: './screens/agent.js' },
  { name: 'Unknown and stale', hash: '#/unknown', module: './screens/unknown.js' },
];

const app = document.getElementById('app');
let main = null;
let guard = null; // () => true while the screen has unsaved edits
let currentHash = location.hash;
let ignoreHash = false;
let unsubscribe = null;

function route(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'flags' && parts[1]) {
    return parts[2] === 'history'
      ? { module: './screens/history.js', params: { key: parts[1] }, nav: '#/flags' }
      : { module: './screens/flag.js', params: { key: parts[1] }, nav: '#/flags' };
  }
  const screen = SCREENS.find((s) => s.hash === `#/${parts[0]}`) || SCREENS[0];
  return { module: screen.module, params: {}, nav: screen.hash };
}

export function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

// Screens call this with a function that says whether edits are unsaved.
export function setGuard(fn) { guard = fn; }

async function mayLeave() {
  if (!guard || !guard()) return true;
  return confirmDialog('Unsaved changes', 'Leave this flag without saving your changes?');
}

window.addEventListener('hashchange', async () => {
  if (ignoreHash) { ignoreHash = false; return; }
  if (!(await mayLeave())) {
    ignoreHash = true;
    location.hash = currentHash;
    return;
  }
  render();
});

window.addEventListener('beforeunload', (e) => {
  if (guard && guard()) { e.preventDefault(); e.returnValue = ''; }
});

// ---- signing in and out ----

function signInScreen(message) {
  live.disconnect();
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const error = errorSlot();
  const form = h('form', { class: 'signin card', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to Ensign'),
    field('Email', email), field('Password', password), error,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(error, null);
    try {
      await api.post('/v1/session', { email: email.value, password: password.value });
      await start();
    } catch (err) {
      showError(error, err);
      password.select();
    }
  });
  fill(app, h('main', { class: 'signin-page' }, form));
  if (message) showError(error, { message });
  email.focus();
}

async function signOut() {
  if (!(await mayLeave())) return;
  guard = null;
  try { await api.del('/v1/session'); } catch { /* the session is gone either way */ }
  state.me = null;
  signInScreen();
}

api.whenSignedOut(() => {
  if (state.me) { state.me = null; signInScreen('Your session ended: sign in again.'); }
});

// ---- the shell ----

async function loadOrg() {
  const org = state.orgs.find((o) => o.slug === state.org);
  state.role = org ? org.role : null;
  const data = await api.get(path`/v1/orgs/${state.org}/environments`);
  state.environments = data.environments;
  const saved = recall(`env.${state.org}`);
  state.env = state.environments.some((e) => e.key === saved) ? saved
    : (state.environments.find((e) => e.key === 'production') || state.environments[0] || {}).key;
  live.connect(state.org);
}

function shell() {
  const orgSelect = h('select', { 'aria-label': 'Organization', class: 'switcher' },
    state.orgs.map((o) => h('option', { value: o.slug, selected: o.slug === state.org }, o.name)));
  orgSelect.addEventListener('change', async () => {
    if (orgSelect.value === state.org) return;
    if (!(await mayLeave())) { orgSelect.value = state.org; return; }
    guard = null;
    state.org = orgSelect.value;
    remember('org', state.org);
    await loadOrg();
    shell();
    navigate('#/flags');
  });
  const envSelect = h('select', { 'aria-label': 'Environment', class: 'switcher', id: 'env-switch' },
    state.environments.map((e) => h('option', { value: e.key, selected: e.key === state.env }, e.name)));
  envSelect.addEventListener('change', async () => {
    if (envSelect.value === state.env) return;
    if (!(await mayLeave())) { envSelect.value = state.env; return; }
    guard = null;
    state.env = envSelect.value;
    remember(`env.${state.org}`, state.env);
    render();
  });
  const liveStatus = h('span', { class: 'live', role: 'status', title: 'Live updates' }, '');
  live.onStatus((s) => { liveStatus.textContent = s === 'live' ? '● live' : s === 'reconnecting' ? '○ reconnecting' : ''; });
  const nav = h('nav', { 'aria-label': 'Screens' }, h('ul', null,
    SCREENS.map((s) => h('li', null, h('a', { href: s.hash, 'data-nav': s.hash }, s.name)))));
  main = h('main', { id: 'main', tabindex: '-1' });
  fill(app,
    h('header', { class: 'topbar' },
      h('a', { class: 'brand', href: '#/flags' }, 'Ensign'),
      orgSelect, envSelect, liveStatus,
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'ghost', title: 'Ctrl-K', onclick: () => openPalette(commands()) }, 'Commands'),
      h('span', { class: 'who' }, state.me.name || state.me.email),
      h('button', { type: 'button', onclick: signOut }, 'Sign out')),
    h('div', { class: 'layout' }, nav, main));
}

function commands() {
  const list = SCREENS.map((s) => ({ label: `Go to ${s.name}`, run: () => navigate(s.hash) }));
  list.push({ label: 'New flag', run: () => navigate('#/flags?new') });
  list.push({ label: 'Sign out', run: signOut });
  for (const f of state.flags || []) list.push({ label: `Flag ${f.key}`, run: () => navigate(`#/flags/${encodeURIComponent(f.key)}`) });
  return list;
}

document.addEventListener('keydown', (e) => {
  if ((e.ctrlKey || e.metaKey) && (e.key === 'k' || e.key === 'K') && state.me) {
    e.preventDefault();
    openPalette(commands());
  }
});

let renderSeq = 0;
async function render() {
  if (!state.me || !main) return;
  currentHash = location.hash;
  const seq = ++renderSeq;
  const target = route(location.hash.split('?')[0]);
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === target.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  guard = null;
  if (unsubscribe) { unsubscribe(); unsubscribe = null; }
  const status = errorSlot();
  try {
    const mod = await import(target.module);
    if (seq !== renderSeq) return;
    const ctx = {
      params: target.params,
      query: new URLSearchParams(location.hash.split('?')[1] || ''),
      navigate,
      setGuard,
      onChange: (fn) => { unsubscribe = live.subscribe(fn); },
      isCurrent: () => seq === renderSeq,
    };
    await mod.default(main, ctx);
  } catch (err) {
    if (seq === renderSeq) fill(main, status) && showError(status, err);
  }
}

async function start() {
  try {
    const me = await api.get('/me');
    state.me = me.user;
    state.orgs = me.orgs || [];
  } catch (err) {
    if (err.status === 401) { signInScreen(); return; }
    fill(app, h('p', { class: 'error', role: 'alert' }, err.message));
    return;
  }
  if (state.orgs.length === 0) {
    fill(app, h('main', { class: 'signin-page' }, h('p', null, 'You belong to no organization yet.'),
      h('button', { type: 'button', onclick: signOut }, 'Sign out')));
    return;
  }
  const saved = recall('org');
  state.org = state.orgs.some((o) => o.slug === saved) ? saved : state.orgs[0].slug;
  await loadOrg();
  shell();
  await render();
}

start();
