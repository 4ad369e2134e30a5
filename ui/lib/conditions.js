// conditions.js - the condition editor shared by rules (flag screen) and
// segments: attribute (offered from the entities' declared attributes),
// operator, values typed by the operator's value kind (and by the declared
// attribute's data type), negate; or a segment picked by key.
import { h } from './view.js';

export const OPERATORS = ['eq', 'neq', 'in', 'not_in', 'contains', 'not_contains', 'starts_with',
  'ends_with', 'matches', 'gt', 'gte', 'lt', 'lte', 'semver_eq', 'semver_gt', 'semver_gte',
  'semver_lt', 'semver_lte', 'before', 'after', 'exists', 'not_exists'];
const NUMERIC = new Set(['gt', 'gte', 'lt', 'lte']);
const NONE = new Set(['exists', 'not_exists']);
const SINGLE = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'semver_eq', 'semver_gt', 'semver_gte', 'semver_lt', 'semver_lte', 'before', 'after']);

// The value kind of an operator for an attribute of dataType (or undefined).
export function valueKind(operator, dataType) {
  if (NONE.has(operator)) return 'none';
  if (NUMERIC.has(operator)) return 'number';
  if (operator.startsWith('semver_')) return 'semver';
  if (operator === 'before' || operator === 'after') return 'time';
  if ((operator === 'eq' || operator === 'neq' || operator === 'in' || operator === 'not_in') && (dataType === 'number' || dataType === 'boolean')) return dataType;
  return 'string';
}

function hintOf(kind, operator) {
  const many = !SINGLE.has(operator);
  switch (kind) {
    case 'none': return 'takes no value';
    case 'number': return 'a number';
    case 'boolean': return many ? 'true or false, comma-separated' : 'true or false';
    case 'semver': return 'a version such as 1.2.3';
    case 'time': return 'an ISO 8601 time';
    default: return many ? 'values, comma-separated' : 'a value';
  }
}

// Parses the text of the values field into the typed array the API takes.
export function parseValues(text, kind) {
  if (kind === 'none') return undefined;
  const items = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (kind === 'number') return items.map((s) => (Number.isFinite(Number(s)) ? Number(s) : s));
  if (kind === 'boolean') return items.map((s) => (s === 'true' ? true : s === 'false' ? false : s));
  return items;
}

// attributes: [{path, dataType}]; segments: [{key, name}].
// A condition editor row bound to cond (mutated in place); onChange after each edit.
export function conditionEditor(cond, attributes, segments, onChange, onRemove, index) {
  const n = index + 1;
  if ('segment' in cond) {
    const select = h('select', { 'aria-label': `Condition ${n} segment` },
      segments.map((s) => h('option', { value: s.key, selected: s.key === cond.segment }, `${s.key}${s.name ? ` (${s.name})` : ''}`)));
    if (!segments.some((s) => s.key === cond.segment)) select.prepend(h('option', { value: cond.segment, selected: true }, cond.segment || '(choose)'));
    select.addEventListener('change', () => { cond.segment = select.value; onChange(); });
    const negate = h('input', { type: 'checkbox', checked: !!cond.negate, 'aria-label': `Condition ${n} negate` });
    negate.addEventListener('change', () => { cond.negate = negate.checked || undefined; onChange(); });
    return h('div', { class: 'condition' }, h('span', { class: 'muted' }, 'in segment'), select,
      h('label', { class: 'check' }, negate, 'not'),
      h('button', { type: 'button', class: 'ghost', onclick: onRemove, 'aria-label': `Remove condition ${n}` }, '✕'));
  }
  const listId = `attrs-${Math.random().toString(36).slice(2)}`;
  const attribute = h('input', { type: 'text', value: cond.attribute || '', list: listId, 'aria-label': `Condition ${n} attribute`, autocomplete: 'off' });
  const datalist = h('datalist', { id: listId }, attributes.map((a) => h('option', { value: a.path }, a.dataType)));
  const operator = h('select', { 'aria-label': `Condition ${n} operator` }, OPERATORS.map((o) => h('option', { value: o, selected: o === cond.operator }, o.replace(/_/g, ' '))));
  const values = h('input', { type: 'text', value: (cond.values || []).join(', '), 'aria-label': `Condition ${n} values` });
  const hint = h('span', { class: 'hint' });
  const negate = h('input', { type: 'checkbox', checked: !!cond.negate, 'aria-label': `Condition ${n} negate` });
  const declared = () => attributes.find((a) => a.path === attribute.value);
  const sync = () => {
    cond.attribute = attribute.value.trim();
    cond.operator = operator.value;
    const kind = valueKind(cond.operator, (declared() || {}).dataType);
    values.disabled = kind === 'none';
    values.inputMode = kind === 'number' ? 'decimal' : 'text';
    hint.textContent = hintOf(kind, cond.operator);
    const parsed = parseValues(values.value, kind);
    if (parsed === undefined) delete cond.values; else cond.values = parsed;
    if (negate.checked) cond.negate = true; else delete cond.negate;
  };
  for (const el of [attribute, values]) el.addEventListener('input', () => { sync(); onChange(); });
  for (const el of [operator, negate]) el.addEventListener('change', () => { sync(); onChange(); });
  sync();
  return h('div', { class: 'condition' }, attribute, datalist, operator, h('span', { class: 'values' }, values, hint),
    h('label', { class: 'check' }, negate, 'not'),
    h('button', { type: 'button', class: 'ghost', onclick: onRemove, 'aria-label': `Remove condition ${n}` }, '✕'));
}

// The declared attributes of GET /entities as paths with their data type.
export function attributePaths(entities) {
  const out = [];
  for (const e of entities || []) for (const a of e.attributes || []) out.push({ path: `${e.key}.${a.key}`, dataType: a.dataType });
  return out;
}
