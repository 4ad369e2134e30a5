// dialog.js - confirmations and small forms in a modal <dialog>: focus
// moves into it, Escape cancels, focus returns to what opened it.
import { h } from './view.js';

// Resolves true on Confirm, false on Cancel or Escape.
export function confirmDialog(title, text) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const headingId = `dialog-title-${Date.now()}`;
    let done = false;
    const finish = (value) => {
      if (done) return;
      done = true;
      dialog.close();
      dialog.remove();
      if (opener && opener.focus) opener.focus();
      resolve(value);
    };
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': headingId },
      h('h2', { id: headingId }, title),
      h('p', null, text),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', onclick: () => finish(true) }, 'Confirm'),
        h('button', { type: 'button', onclick: () => finish(false) }, 'Cancel')));
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); finish(false); });
    document.body.appendChild(dialog);
    dialog.showModal();
    dialog.querySelector('button.primary').focus();
  });
}
