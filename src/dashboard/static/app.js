/* global document, navigator, window, Element, HTMLFormElement, setTimeout */
// Copy buttons: <button data-copy="ID"> copies the text of the element with that id.
// No framework; works with the keyboard because the buttons are real buttons.
'use strict';

function announce(message) {
  const status = document.getElementById('live-status');
  if (status) status.textContent = message;
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Fallback for plain-HTTP development hosts without the async clipboard.
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'absolute';
  area.style.left = '-9999px';
  document.body.appendChild(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  try {
    await copyText(source.textContent.trim());
    button.textContent = 'Copied';
    announce('Copied to the clipboard');
  } catch {
    button.textContent = 'Select and copy';
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    announce('Copying failed; the text is selected, press Ctrl+C');
  }
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 2000);
});

// Forms that do something irreversible ask first (data-confirm="message").
document.addEventListener('submit', (event) => {
  const form = event.target;
  const message = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
  if (message && !window.confirm(message)) event.preventDefault();
});
