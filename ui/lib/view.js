// view.js - the one way the dashboard makes elements.
//
// h(tag, props, ...children) creates an element; every string child becomes
// a text node, so text from the API is always text and never markup. There
// is no innerHTML anywhere in the dashboard. props: `class`, `on*` event
// handlers, `aria-*`/`data-*`/other attributes, and a few DOM properties
// (value, checked, disabled, hidden, selected).

const PROPS = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'readOnly']);
const SVG = 'http://www.w3.org/2000/svg';

function apply(el, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (PROPS.has(name)) {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  apply(el, props);
  append(el, children);
  return el;
}

export function svg(tag, props, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(props || {})) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

// Replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let ids = 0;
export function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

// A labelled field: <label for> the control, so the control's accessible
// name is exactly the label text; a hint describes it (aria-describedby).
export function field(text, control, hint) {
  if (!control.id) control.id = uid('field');
  let hintEl = null;
  if (hint) {
    hintEl = h('span', { class: 'hint', id: `${control.id}-hint` }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { class: 'field-label', for: control.id }, text), control, hintEl);
}

// Where a failure is shown, next to what caused it.
export function errorSlot() {
  return h('p', { class: 'error', role: 'alert', hidden: true });
}

export function showError(slot, err) {
  if (!slot) return;
  if (!err) {
    slot.hidden = true;
    slot.textContent = '';
    return;
  }
  slot.textContent = err.message || String(err);
  slot.hidden = false;
}

// "3 minutes ago" style text of an ISO time (or "never").
export function ago(iso) {
  if (!iso) return 'never';
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (Number.isNaN(seconds)) return iso;
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// A small line chart of counts (no labels: the title says what it is).
export function sparkline(counts, title) {
  const width = 72;
  const height = 18;
  const max = Math.max(1, ...counts);
  const step = counts.length > 1 ? width / (counts.length - 1) : width;
  const points = counts.map((c, i) => `${(i * step).toFixed(1)},${(height - 1 - (c / max) * (height - 2)).toFixed(1)}`).join(' ');
  return svg('svg', { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': title },
    svg('title', null, title), svg('polyline', { points, fill: 'none', 'stroke-width': '1.5' }));
}
