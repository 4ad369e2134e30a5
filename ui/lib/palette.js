// palette.js - the command palette (Ctrl-K / Cmd-K): a combobox named
// Command over a list of commands (screens, flags, actions); arrows move,
// Enter runs, Escape closes.
import { h, fill } from './view.js';

let open = null;

export function openPalette(commands) {
  if (open) return;
  const opener = document.activeElement;
  const listId = 'palette-list';
  const input = h('input', {
    type: 'text', role: 'combobox', 'aria-label': 'Command', 'aria-expanded': 'true',
    'aria-controls': listId, 'aria-autocomplete': 'list', autocomplete: 'off', class: 'palette-input',
  });
  const list = h('ul', { id: listId, role: 'listbox', 'aria-label': 'Commands', class: 'palette-list' });
  const dialog = h('dialog', { class: 'dialog palette', 'aria-label': 'Command palette' }, input, list);
  let shown = [];
  let active = 0;

  const close = () => {
    dialog.close();
    dialog.remove();
    open = null;
    if (opener && opener.focus && document.contains(opener)) opener.focus();
  };
  const run = (cmd) => { close(); cmd.run(); };
  const draw = () => {
    const q = input.value.trim().toLowerCase();
    shown = commands.filter((c) => c.label.toLowerCase().includes(q)).slice(0, 50);
    active = Math.min(active, Math.max(0, shown.length - 1));
    fill(list, shown.map((c, i) => h('li', {
      id: `palette-opt-${i}`, role: 'option', 'aria-selected': i === active ? 'true' : 'false',
      class: i === active ? 'active' : '', onmousedown: (e) => { e.preventDefault(); run(c); },
    }, c.label)));
    if (shown.length) input.setAttribute('aria-activedescendant', `palette-opt-${active}`);
    else input.removeAttribute('aria-activedescendant');
  };
  input.addEventListener('input', () => { active = 0; draw(); });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown') { active = Math.min(active + 1, shown.length - 1); draw(); e.preventDefault(); }
    else if (e.key === 'ArrowUp') { active = Math.max(active - 1, 0); draw(); e.preventDefault(); }
    else if (e.key === 'Enter' && shown[active]) { e.preventDefault(); run(shown[active]); }
  });
  dialog.addEventListener('cancel', (e) => { e.preventDefault(); close(); });
  document.body.appendChild(dialog);
  open = dialog;
  dialog.showModal();
  draw();
  input.focus();
}
