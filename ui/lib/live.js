// live.js - the organization's change stream (GET /v1/orgs/{org}/events,
// server-sent events): every audit event of the organization arrives here
// and every subscriber hears of it, so another person's change shows
// without a reload. EventSource reconnects by itself (with Last-Event-ID);
// a `reset` event means too much was missed: subscribers reload.
import { path } from './api.js';

let source = null;
let org = null;
const listeners = new Set();
let statusListener = () => {};

export function onStatus(fn) { statusListener = fn; }

export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function emit(event) {
  for (const fn of [...listeners]) {
    try { fn(event); } catch (err) { console.error(err); }
  }
}

export function connect(slug) {
  if (source && org === slug) return;
  disconnect();
  org = slug;
  if (typeof EventSource === 'undefined') return;
  source = new EventSource(path`/v1/orgs/${slug}/events`, { withCredentials: true });
  source.onopen = () => statusListener('live');
  source.onerror = () => statusListener(source && source.readyState === 2 ? 'off' : 'reconnecting');
  source.onmessage = (e) => {
    let data = null;
    try { data = JSON.parse(e.data); } catch { return; }
    emit({ type: 'change', data });
  };
  source.addEventListener('reset', () => emit({ type: 'reset' }));
}

export function disconnect() {
  if (source) source.close();
  source = null;
  org = null;
  statusListener('off');
}
