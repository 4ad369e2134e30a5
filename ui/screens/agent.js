// agent.js - screen 10: a conversation with the agent (POST /ai/messages).
// Each proposed action shows its summary and the exact request "Execute"
// sends (POST /ai/actions/execute); nothing runs without that click.
import { h, fill, errorSlot, showError } from '../lib/view.js';
import * as api from '../lib/api.js';
import { state } from '../lib/state.js';

const conversations = new Map(); // per organization, for this page's life

export default async function agentScreen(main) {
  const messages = conversations.get(state.org) || [];
  conversations.set(state.org, messages);
  const chat = h('div', { class: 'chat', 'aria-live': 'polite' });
  const input = h('textarea', { rows: 3, 'aria-label': 'Message', placeholder: 'enable new-checkout in preview' });
  const error = errorSlot();

  const actionCard = (action) => {
    const request = { org_id: state.org, tool: action.tool, input: action.input };
    const outcome = h('div', { role: 'status' });
    const rowError = errorSlot();
    const execute = h('button', { type: 'button', class: 'primary' }, 'Execute');
    execute.addEventListener('click', async () => {
      execute.disabled = true;
      try {
        const data = await api.post('/ai/actions/execute', request);
        fill(outcome, h('p', { class: 'badge ok' }, 'Done'), h('pre', null, JSON.stringify(data.result, null, 2)));
        showError(rowError, null);
      } catch (err) { showError(rowError, err); execute.disabled = false; }
    });
    return h('div', { class: 'card', role: 'group', 'aria-label': `Proposed: ${action.summary}` },
      h('p', null, h('strong', null, action.summary)),
      h('pre', null, `POST /ai/actions/execute\n${JSON.stringify(request, null, 2)}`),
      execute, rowError, outcome);
  };

  const draw = () => fill(chat, messages.map((m) => h('div', { class: `msg ${m.role}` },
    h('span', { class: 'muted' }, m.role === 'user' ? 'You' : 'Agent'), h('div', null, m.content),
    (m.actions || []).map(actionCard))));

  const send = async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    messages.push({ role: 'user', content: text });
    draw();
    input.value = '';
    try {
      const data = await api.post('/ai/messages', { org_id: state.org, messages: messages.map((m) => ({ role: m.role, content: m.content })) });
      messages.push({ role: 'assistant', content: data.reply, actions: (data.proposals && data.proposals.actions) || [] });
      showError(error, null);
      draw();
    } catch (err) { showError(error, err); }
    input.focus();
  };
  const form = h('form', { class: 'card', 'aria-label': 'Ask the agent' }, input, error,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Send')));
  form.addEventListener('submit', send);
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) send(e); });
  fill(main, h('h1', null, 'Agent'), h('p', { class: 'muted' }, 'Ask for a change in plain words; nothing changes until you press Execute on a proposed action.'), chat, form);
  draw();
}
