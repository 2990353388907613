/* global document, navigator, window, Element, HTMLFormElement, setTimeout */
// Copy buttons and confirmations.
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

// <button data-copy="ID"> copies the text of the element with that id; <button data-copy-text="…">
// copies its own attribute (ids in tables). The label says "Copied" for two seconds.
function copySource(button) {
  const text = button.getAttribute('data-copy-text');
  if (text !== null) return { text, node: null };
  const node = document.getElementById(button.getAttribute('data-copy'));
  return node ? { text: node.textContent.trim(), node } : null;
}

function selectNode(node) {
  if (!node) return;
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy], button[data-copy-text]') : null;
  if (!button) return;
  const source = copySource(button);
  if (!source) return;
  if (!button.hasAttribute('data-label')) button.setAttribute('data-label', button.textContent);
  try {
    await copyText(source.text);
    button.textContent = 'Copied';
    button.classList.add('copied');
    announce('Copied to the clipboard');
  } catch {
    button.textContent = 'Select and copy';
    selectNode(source.node);
    announce(source.node ? 'Copying failed; the text is selected, press Ctrl+C' : 'Copying failed');
  }
  setTimeout(() => {
    button.textContent = button.getAttribute('data-label');
    button.classList.remove('copied');
  }, 2000);
});

// Forms that do something irreversible ask first (data-confirm="message").
document.addEventListener('submit', (event) => {
  const form = event.target;
  const message = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
  if (message && !window.confirm(message)) event.preventDefault();
});
