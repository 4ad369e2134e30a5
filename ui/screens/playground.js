// playground.js - screen 7: evaluate every flag for a context in the
// chosen environment (POST /v1/orgs/{org}/environments/{env}/evaluate),
// with the equivalent curl against /ofrep.
import { h, fill, errorSlot, showError } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';

function curlLine(context) {
  const body = JSON.stringify({ context });
  return `curl -X POST ${location.origin}/ofrep/v1/evaluate/flags \\\n  -H "Authorization: Bearer $SDK_KEY" \\\n  -H 'Content-Type: application/json' \\\n  -d '${body.replace(/'/g, "'\\''")}'`;
}

export default async function playgroundScreen(main) {
  const context = h('textarea', { rows: 8, 'aria-label': 'Context', spellcheck: 'false' });
  context.value = JSON.stringify({ targetingKey: 'user-1', country: 'NL' }, null, 2);
  const error = errorSlot();
  const results = h('div');
  const curl = h('pre', { 'aria-label': 'Equivalent curl' });
  const envName = (state.environments.find((e) => e.key === state.env) || {}).name || state.env;
  const evaluate = async () => {
    let parsed;
    try { parsed = JSON.parse(context.value); } catch (err) { showError(error, { message: `The context is not JSON: ${err.message}` }); return; }
    showError(error, null);
    curl.textContent = curlLine(parsed);
    try {
      const data = await api.post(path`/v1/orgs/${state.org}/environments/${state.env}/evaluate`, { context: parsed });
      const flags = data.flags || [];
      fill(results, h('table', { class: 'list' },
        h('thead', null, h('tr', null, ['Flag', 'Variant', 'Value', 'Reason', 'Rule'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, flags.map((f) => h('tr', null, h('td', null, f.key), h('td', null, f.variant || ''),
          h('td', null, h('code', null, f.value === undefined ? '' : JSON.stringify(f.value))),
          h('td', null, f.reason || f.errorCode || '', f.errorDetails ? h('div', { class: 'muted' }, f.errorDetails) : null),
          h('td', null, f.ruleId || (f.metadata && f.metadata.ruleId) || '—'))))));
    } catch (err) { showError(error, err); }
  };
  curl.textContent = curlLine(JSON.parse(context.value));
  fill(main, h('h1', null, `Playground in ${envName}`),
    h('label', { class: 'field' }, h('span', { class: 'field-label' }, 'Context (JSON)'), context),
    h('div', { class: 'row' }, h('button', { type: 'button', class: 'primary', onclick: evaluate }, 'Evaluate')), error, results,
    h('h2', null, 'The same with curl'), curl);
}
