// flag.js - screen 3: one flag. Variants (added, edited and deleted at
// once, each its own revision) and, for the chosen environment, the
// targeting: enabled, default serve (a variant, or a rollout edited in
// percent that must add up to 100%), off variant and the ordered rules.
// Targeting edits are staged: "Review changes" lists them, "Save" sends
// them (PATCH the environment, PUT the rule set: one revision each);
// leaving with unsaved edits asks first; a change made elsewhere meanwhile
// is announced instead of overwriting the edits.
import { h, fill, field, errorSlot, showError } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';
import { conditionEditor, attributePaths } from '../lib/conditions.js';

const SCALE = 1000; // a weight is percent × 1000: 33.333% is 33333

function serveToDraft(serve) {
  if (serve && Array.isArray(serve.rollout)) {
    const total = serve.rollout.reduce((s, i) => s + i.weight, 0) || 1;
    return {
      kind: 'rollout', bucketBy: serve.bucketBy || '',
      items: serve.rollout.map((i) => ({ variant: i.variant, percent: Math.round((i.weight * 100 * SCALE) / total) / SCALE })),
    };
  }
  return { kind: 'variant', variant: serve ? serve.variant : '' };
}

function rolloutTotal(serve) {
  return serve.items.reduce((s, i) => s + Math.round(Number(i.percent) * SCALE), 0);
}

function draftToServe(serve) {
  if (serve.kind === 'variant') return { variant: serve.variant };
  const out = { rollout: serve.items.map((i) => ({ variant: i.variant, weight: Math.round(Number(i.percent) * SCALE) })) };
  if (serve.bucketBy) out.bucketBy = serve.bucketBy;
  return out;
}

function envToDraft(env) {
  return {
    enabled: env.enabled,
    serve: serveToDraft(env.defaultServe),
    off: env.offVariantKey || '',
    rules: env.rules.map((r) => ({
      id: r.id, description: r.description || '',
      conditions: JSON.parse(JSON.stringify(r.conditions || [])),
      serve: serveToDraft(r.serve),
    })),
  };
}

// The API bodies a draft stands for (what Save sends, what review compares).
function draftBodies(d) {
  return {
    config: { enabled: d.enabled, defaultServe: draftToServe(d.serve), ...(d.off ? { offVariantKey: d.off } : {}) },
    rules: d.rules.map((r) => ({ description: r.description || null, conditions: r.conditions, serve: draftToServe(r.serve) })),
  };
}

function serveText(serve) {
  if (serve.kind === 'variant') return `serve ${serve.variant}`;
  return `rollout ${serve.items.map((i) => `${i.variant} ${i.percent}%`).join(', ')}`;
}

function conditionText(c) {
  if ('segment' in c) return `${c.negate ? 'not ' : ''}in segment ${c.segment}`;
  return `${c.negate ? 'not ' : ''}${c.attribute} ${c.operator}${c.values ? ` ${c.values.join(', ')}` : ''}`;
}

function ruleText(r) {
  const conds = r.conditions.length ? r.conditions.map(conditionText).join(' and ') : 'everyone';
  return `${r.description ? `${r.description}: ` : ''}if ${conds} then ${serveText(r.serve)}`;
}

// What Save would change, as sentences.
function changesOf(before, after) {
  const out = [];
  if (before.enabled !== after.enabled) out.push(after.enabled ? 'Turn on' : 'Turn off');
  if (JSON.stringify(draftToServe(before.serve)) !== JSON.stringify(draftToServe(after.serve))) out.push(`Default: ${serveText(before.serve)} → ${serveText(after.serve)}`);
  if (before.off !== after.off) out.push(`Off variant: ${before.off || '—'} → ${after.off || '—'}`);
  const b = before.rules.map(ruleText);
  const a = after.rules.map(ruleText);
  if (JSON.stringify(draftBodies(before).rules) !== JSON.stringify(draftBodies(after).rules)) {
    b.forEach((t, i) => { if (!a.includes(t)) out.push(`Remove or change rule ${i + 1}: ${t}`); });
    a.forEach((t, i) => { if (!b.includes(t)) out.push(`New rule ${i + 1}: ${t}`); });
    if (out.length === 0 || (b.length === a.length && b.every((t) => a.includes(t)))) out.push(`Rule order: ${a.map((t, i) => `${i + 1}. ${t}`).join(' ')}`);
  }
  return out;
}

function validate(d) {
  const serves = [['Default serve', d.serve], ...d.rules.map((r, i) => [`Rule ${i + 1}`, r.serve])];
  for (const [name, serve] of serves) {
    if (serve.kind === 'variant' && !serve.variant) return `${name}: choose a variant`;
    if (serve.kind === 'rollout') {
      if (serve.items.some((i) => !Number.isFinite(Number(i.percent)) || Number(i.percent) < 0)) return `${name}: every percentage must be a number from 0 to 100`;
      const total = rolloutTotal(serve);
      if (total !== 100 * SCALE) return `${name}: the rollout adds up to ${total / SCALE}%, not 100%`;
    }
  }
  return null;
}

export default async function flagScreen(main, ctx) {
  const key = ctx.params.key;
  const base = path`/v1/orgs/${state.org}/flags/${key}`;
  let detail;
  let entities = [];
  let segments = [];
  try {
    [detail, entities, segments] = await Promise.all([
      api.get(base),
      api.get(path`/v1/orgs/${state.org}/entities`).then((d) => d.entities).catch(() => []),
      api.get(path`/v1/orgs/${state.org}/segments`).then((d) => d.segments).catch(() => []),
    ]);
  } catch (err) {
    const slot = errorSlot();
    fill(main, h('h1', null, key), slot);
    showError(slot, err);
    return;
  }
  if (!ctx.isCurrent()) return;
  const attributes = attributePaths(entities);
  let original = null;
  let draft = null;
  const banner = h('p', { class: 'banner', role: 'status', hidden: true });
  const variantsBox = h('section', { 'aria-labelledby': 'variants-title' });
  const targetingBox = h('section', { 'aria-labelledby': 'targeting-title' });
  const review = h('div', { class: 'review', hidden: true, role: 'region', 'aria-label': 'Review changes' });
  const saveError = errorSlot();
  const dirty = () => draft && JSON.stringify(draftBodies(draft)) !== JSON.stringify(draftBodies(original));
  ctx.setGuard(dirty);

  const envOf = (d) => d.environments.find((e) => e.key === state.env) || d.environments[0];

  // ---- variants: each edit is one request, at once ----
  const drawVariants = () => {
    const fixed = detail.flag.type === 'boolean';
    const error = errorSlot();
    const rows = detail.variants.map((v) => {
      const label = h('input', { type: 'text', value: v.label || '', 'aria-label': `Label of ${v.key}`, disabled: fixed });
      const value = h('input', { type: 'text', value: JSON.stringify(v.value), 'aria-label': `Value of ${v.key}`, disabled: fixed });
      const rowError = errorSlot();
      const save = async () => {
        try {
          const body = { label: label.value || null, value: parseValue(value.value, detail.flag.type) };
          await api.patch(`${base}/variants/${encodeURIComponent(v.key)}`, body);
          showError(rowError, null);
          await reload();
        } catch (err) { showError(rowError, err); }
      };
      const remove = async () => {
        if (!(await confirmDialog(`Delete variant ${v.key}?`, 'Evaluations that serve it must be changed first.'))) return;
        try { await api.del(`${base}/variants/${encodeURIComponent(v.key)}`); await reload(); } catch (err) { showError(rowError, err); }
      };
      return h('tr', null, h('td', null, h('code', null, v.key)), h('td', null, label), h('td', null, value),
        h('td', null, fixed ? null : [h('button', { type: 'button', onclick: save }, 'Update'), ' ',
          h('button', { type: 'button', class: 'danger', onclick: remove, 'aria-label': `Delete variant ${v.key}` }, 'Delete')], rowError));
    });
    const addLabel = h('input', { type: 'text', 'aria-label': 'New variant label' });
    const addValue = h('input', { type: 'text', 'aria-label': 'New variant value', placeholder: detail.flag.type === 'string' ? 'text' : detail.flag.type === 'number' ? '42' : '{"a": 1}' });
    const addForm = h('form', { class: 'row', hidden: true, 'aria-label': 'Add variant' }, addLabel, addValue,
      h('button', { type: 'submit', class: 'primary' }, 'Add'));
    addForm.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        await api.post(`${base}/variants`, { label: addLabel.value || null, value: parseValue(addValue.value, detail.flag.type) });
        await reload();
        const again = variantsBox.querySelector('button[data-add]');
        if (again) again.focus();
      } catch (err) { showError(error, err); }
    });
    fill(variantsBox,
      h('h2', { id: 'variants-title' }, 'Variants'),
      fixed ? h('p', { class: 'muted' }, 'A boolean flag has exactly the variants on and off.') : h('p', { class: 'muted' }, 'Variant edits apply at once.'),
      h('table', { class: 'list' }, h('thead', null, h('tr', null, ['Key', 'Label', 'Value', ''].map((t) => h('th', { scope: 'col' }, t)))), h('tbody', null, rows)),
      fixed ? null : h('button', { type: 'button', 'data-add': '1', onclick: () => { addForm.hidden = false; addValue.focus(); } }, 'Add variant'),
      addForm, error);
  };

  // ---- targeting: staged ----
  const variantSelect = (value, label, onPick, allowEmpty) => {
    const select = h('select', { 'aria-label': label },
      allowEmpty ? h('option', { value: '' }, '—') : null,
      detail.variants.map((v) => h('option', { value: v.key, selected: v.key === value }, v.label ? `${v.key} (${v.label})` : v.key)));
    if (!allowEmpty && !value && detail.variants.length) onPick(select.value);
    select.addEventListener('change', () => { onPick(select.value); changed(); });
    return select;
  };

  const serveEditor = (serve, name) => {
    const box = h('div', { class: 'serve' });
    const draw = () => {
      const kind = h('select', { 'aria-label': `${name} kind` },
        h('option', { value: 'variant', selected: serve.kind === 'variant' }, 'one variant'),
        h('option', { value: 'rollout', selected: serve.kind === 'rollout' }, 'a rollout'));
      kind.addEventListener('change', () => {
        if (kind.value === 'rollout') {
          serve.kind = 'rollout';
          serve.items = detail.variants.map((v, i) => ({ variant: v.key, percent: i === 0 ? 100 : 0 }));
          serve.bucketBy = serve.bucketBy || '';
        } else {
          serve.kind = 'variant';
          serve.variant = (serve.items && serve.items[0] && serve.items[0].variant) || (detail.variants[0] || {}).key || '';
        }
        draw();
        changed();
      });
      if (serve.kind === 'variant') {
        fill(box, kind, variantSelect(serve.variant, `${name} variant`, (v) => { serve.variant = v; }));
        return;
      }
      const total = h('span', { class: 'total', role: 'status' });
      const showTotal = () => {
        const t = rolloutTotal(serve) / SCALE;
        total.textContent = `total ${t}%`;
        total.classList.toggle('bad', t !== 100);
      };
      const items = serve.items.map((item) => {
        const percent = h('input', { type: 'number', min: '0', max: '100', step: '0.001', value: String(item.percent), 'aria-label': `${name} ${item.variant} percent` });
        percent.addEventListener('input', () => { item.percent = percent.value === '' ? NaN : Number(percent.value); showTotal(); changed(); });
        return h('label', { class: 'weight' }, h('span', null, item.variant), percent, '%');
      });
      const bucket = h('input', { type: 'text', value: serve.bucketBy || '', placeholder: 'targetingKey', 'aria-label': `${name} bucket by` });
      bucket.addEventListener('input', () => { serve.bucketBy = bucket.value.trim(); changed(); });
      showTotal();
      fill(box, kind, h('div', { class: 'weights' }, items, total), field('Bucket by', bucket));
    };
    draw();
    return box;
  };

  const ruleCard = (rule, i) => {
    const n = i + 1;
    const description = h('input', { type: 'text', value: rule.description, 'aria-label': `Rule ${n} description` });
    description.addEventListener('input', () => { rule.description = description.value; changed(); });
    const conds = h('div', { class: 'conditions' });
    const drawConds = () => fill(conds, rule.conditions.length ? rule.conditions.map((c, ci) => conditionEditor(c, attributes, segments, changed,
      () => { rule.conditions.splice(ci, 1); drawConds(); changed(); }, ci)) : h('p', { class: 'muted' }, 'No condition: matches everyone.'));
    drawConds();
    const move = (to) => {
      const [r] = draft.rules.splice(i, 1);
      draft.rules.splice(to, 0, r);
      drawTargeting();
      changed();
      const btn = targetingBox.querySelectorAll('.rule')[to];
      if (btn) btn.querySelector('input').focus();
    };
    return h('div', { class: 'rule card', role: 'group', 'aria-label': `Rule ${n}` },
      h('div', { class: 'rule-head' }, h('strong', null, `Rule ${n}`), description,
        h('button', { type: 'button', class: 'ghost', disabled: i === 0, onclick: () => move(i - 1), 'aria-label': `Move rule ${n} up` }, '↑'),
        h('button', { type: 'button', class: 'ghost', disabled: i === draft.rules.length - 1, onclick: () => move(i + 1), 'aria-label': `Move rule ${n} down` }, '↓'),
        h('button', { type: 'button', class: 'danger', onclick: () => { draft.rules.splice(i, 1); drawTargeting(); changed(); }, 'aria-label': `Delete rule ${n}` }, 'Delete')),
      conds,
      h('div', { class: 'row' },
        h('button', { type: 'button', onclick: () => { rule.conditions.push({ attribute: '', operator: 'eq', values: [] }); drawConds(); changed(); conds.querySelector('.condition:last-child input').focus(); } }, 'Add condition'),
        h('button', { type: 'button', disabled: segments.length === 0, onclick: () => { rule.conditions.push({ segment: segments[0].key }); drawConds(); changed(); } }, 'Add segment condition')),
      h('div', { class: 'row' }, h('span', null, 'Serve'), serveEditor(rule.serve, `Rule ${n} serve`)));
  };

  const changed = () => {
    review.hidden = true;
    const d = dirty();
    main.classList.toggle('dirty', !!d);
    saveState.textContent = d ? 'Unsaved changes' : 'No unsaved changes';
  };
  const saveState = h('span', { class: 'muted', role: 'status' });

  const drawTargeting = () => {
    const env = envOf(detail);
    const enabled = h('input', { type: 'checkbox', checked: draft.enabled });
    enabled.addEventListener('change', () => { draft.enabled = enabled.checked; changed(); });
    const copyFrom = h('select', { 'aria-label': 'Copy targeting from' },
      detail.environments.filter((e) => e.key !== env.key).map((e) => h('option', { value: e.key }, e.name)));
    const copyError = errorSlot();
    const copy = async () => {
      if (dirty() && !(await confirmDialog('Discard your edits?', 'Copying replaces the targeting of this environment.'))) return;
      try {
        await api.post(`${base}/environments/${encodeURIComponent(env.key)}/copy`, { from: copyFrom.value });
        await reload(true);
      } catch (err) { showError(copyError, err); }
    };
    fill(targetingBox,
      h('h2', { id: 'targeting-title' }, `Targeting in ${env.name}`),
      h('label', { class: 'check big' }, enabled, `Enabled in ${env.name}`),
      h('div', { class: 'row' }, h('span', null, 'Default serve'), serveEditor(draft.serve, 'Default serve')),
      h('div', { class: 'row' }, field('Off variant', variantSelect(draft.off, 'Off variant', (v) => { draft.off = v; }, true))),
      h('h3', null, 'Rules'),
      h('p', { class: 'muted' }, 'Evaluated in order; the first that matches serves.'),
      draft.rules.map(ruleCard),
      h('button', { type: 'button', onclick: () => {
        draft.rules.push({ description: '', conditions: [], serve: { kind: 'variant', variant: (detail.variants[0] || {}).key || '' } });
        drawTargeting(); changed();
        const cards = targetingBox.querySelectorAll('.rule');
        cards[cards.length - 1].querySelector('input').focus();
      } }, 'Add rule'),
      h('div', { class: 'row copy' }, copyFrom, h('button', { type: 'button', onclick: copy, disabled: detail.environments.length < 2 }, 'Copy targeting'), copyError));
  };

  const showReview = () => {
    const list = changesOf(original, draft);
    fill(review, h('h3', null, 'Changes to save'),
      list.length ? h('ul', null, list.map((t) => h('li', null, t))) : h('p', null, 'Nothing has changed.'));
    review.hidden = false;
    review.focus();
  };

  const save = async () => {
    showError(saveError, null);
    const problem = validate(draft);
    if (problem) { showError(saveError, { message: problem }); return; }
    if (!dirty()) { showError(saveError, { message: 'Nothing to save.' }); return; }
    const env = envOf(detail);
    const before = draftBodies(original);
    const after = draftBodies(draft);
    const envPath = `${base}/environments/${encodeURIComponent(env.key)}`;
    try {
      if (env.key === 'production' && before.config.enabled !== after.config.enabled
          && !(await confirmDialog(`Turn ${after.config.enabled ? 'on' : 'off'} in production?`, `${key} changes for production traffic at once.`))) return;
      if (JSON.stringify(before.config) !== JSON.stringify(after.config)) await api.patch(envPath, after.config);
      if (JSON.stringify(before.rules) !== JSON.stringify(after.rules)) await api.put(`${envPath}/rules`, { rules: after.rules });
      await reload(true);
      saveState.textContent = 'Saved';
    } catch (err) {
      showError(saveError, err);
    }
  };

  const reload = async (resetDraft) => {
    const fresh = await api.get(base);
    if (!ctx.isCurrent()) return;
    detail = fresh;
    const freshDraft = envToDraft(envOf(detail));
    if (resetDraft || !dirty()) {
      original = freshDraft;
      draft = envToDraft(envOf(detail));
      banner.hidden = true;
      drawAll();
    } else if (JSON.stringify(draftBodies(freshDraft)) !== JSON.stringify(draftBodies(original))) {
      fill(banner, 'This flag changed underneath while you were editing. ',
        h('button', { type: 'button', onclick: () => reload(true) }, 'Discard my edits and reload'));
      banner.hidden = false;
    }
    drawVariants();
  };

  const head = h('div', { class: 'screen-head' });
  const drawHead = () => {
    const f = detail.flag;
    fill(head, h('div', null, h('h1', null, f.key), f.name !== f.key ? h('p', null, f.name) : null,
      f.description ? h('p', { class: 'description' }, f.description) : null,
      h('p', { class: 'muted' }, `${f.type} flag`, f.tags.length ? ` · tags: ${f.tags.join(', ')}` : '', f.archivedAt ? ' · archived' : '',
        f.stale ? ` · stale (${f.stale.reason})` : '')),
    h('a', { href: `#/flags/${encodeURIComponent(f.key)}/history`, class: 'button' }, 'History'));
  };
  const drawAll = () => { drawHead(); drawVariants(); drawTargeting(); changed(); };

  original = envToDraft(envOf(detail));
  draft = envToDraft(envOf(detail));
  fill(main, h('p', null, h('a', { href: '#/flags' }, '← Flags')), head, banner, variantsBox, targetingBox,
    h('div', { class: 'savebar' },
      h('button', { type: 'button', onclick: showReview }, 'Review changes'),
      h('button', { type: 'button', class: 'primary', onclick: save }, 'Save'),
      saveState, saveError),
    review);
  review.setAttribute('tabindex', '-1');
  drawAll();
  let timer = null;
  ctx.onChange(() => { clearTimeout(timer); timer = setTimeout(() => reload(false).catch(() => {}), 100); });
}

function parseValue(text, type) {
  const t = text.trim();
  if (type === 'string') {
    if (t.startsWith('"')) { try { return JSON.parse(t); } catch { return text; } }
    return text;
  }
  try { return JSON.parse(t); } catch { return t; }
}
