// members.js - screen 9: members (change role, remove) and invitations
// (invite, revoke). The organization's rules are the server's: its 409
// (the last owner) is shown next to the control that caused it.
import { h, fill, field, errorSlot, showError, when } from '../lib/view.js';
import * as api from '../lib/api.js';
import { path } from '../lib/api.js';
import { state } from '../lib/state.js';
import { confirmDialog } from '../lib/dialog.js';

const ROLES = ['owner', 'admin', 'member', 'viewer'];

export default async function membersScreen(main, ctx) {
  const membersBox = h('div');
  const invitesBox = h('div');
  const error = errorSlot();

  const load = async () => {
    try {
      const members = await api.get(path`/orgs/${state.org}/members`);
      if (!ctx.isCurrent()) return;
      fill(membersBox, h('table', { class: 'list' },
        h('thead', null, h('tr', null, ['Name', 'Email', 'Role', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, members.members.map((m) => {
          const rowError = errorSlot();
          const role = h('select', { 'aria-label': `Role of ${m.email}` }, ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)));
          role.addEventListener('change', async () => {
            try {
              await api.put(path`/orgs/${state.org}/members/${m.user_id}/role`, { role: role.value });
              showError(rowError, null);
              m.role = role.value;
            } catch (err) { role.value = m.role; showError(rowError, err); }
          });
          const remove = async () => {
            if (!(await confirmDialog(`Remove ${m.name || m.email}?`, 'They lose access to this organization at once.'))) return;
            try { await api.del(path`/orgs/${state.org}/members/${m.user_id}`); await load(); } catch (err) { showError(rowError, err); }
          };
          return h('tr', null, h('td', null, m.name), h('td', null, m.email), h('td', null, role, rowError),
            h('td', null, h('button', { type: 'button', class: 'danger', onclick: remove, 'aria-label': `Remove ${m.email}` }, 'Remove')));
        }))));
      showError(error, null);
    } catch (err) { showError(error, err); }
    try {
      const invites = await api.get(path`/orgs/${state.org}/invitations`);
      if (!ctx.isCurrent()) return;
      const pending = invites.invitations.filter((i) => i.status === 'pending');
      fill(invitesBox, pending.length ? h('table', { class: 'list' },
        h('thead', null, h('tr', null, ['Email', 'Role', 'Invited by', 'Expires', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, pending.map((i) => {
          const rowError = errorSlot();
          const revoke = async () => {
            if (!(await confirmDialog(`Revoke the invitation of ${i.email}?`, 'The link they received stops working.'))) return;
            try { await api.del(path`/orgs/${state.org}/invitations/${i.id}`); await load(); } catch (err) { showError(rowError, err); }
          };
          return h('tr', null, h('td', null, i.email), h('td', null, i.role), h('td', null, i.inviter ? i.inviter.name : '—'), h('td', null, when(i.expires_at)),
            h('td', null, h('button', { type: 'button', onclick: revoke, 'aria-label': `Revoke invitation of ${i.email}` }, 'Revoke invitation'), rowError));
        }))) : h('p', { class: 'muted' }, 'No pending invitation.'));
    } catch (err) { fill(invitesBox, h('p', { class: 'muted' }, `Invitations: ${err.message}`)); }
  };

  const login = h('input', { type: 'text', required: true, autocomplete: 'off' });
  const role = h('select', null, ['member', 'viewer', 'admin'].map((r) => h('option', { value: r }, r)));
  const formError = errorSlot();
  const result = h('p', { role: 'status', class: 'muted' });
  const form = h('form', { class: 'card', 'aria-label': 'Invite' },
    h('div', { class: 'row' }, field('Email or username', login), field('Role', role)), formError, result,
    h('button', { type: 'submit', class: 'primary' }, 'Invite'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const data = await api.post(path`/orgs/${state.org}/invitations`, { login: login.value.trim(), role: role.value });
      result.textContent = data.status === 'added' ? `${login.value} was added.` : `${data.email || login.value} was invited.`;
      login.value = '';
      showError(formError, null);
      await load();
    } catch (err) { showError(formError, err); }
  });
  fill(main, h('h1', null, 'Members'), error, membersBox, h('h2', null, 'Invite'), form, h('h2', null, 'Invitations'), invitesBox);
  await load();
}
