import type { Queryable } from '../../db/client.js';
import { escapeHtml } from '../../lib/html.js';
import { associatedPersons } from '../customers/service.js';
import type { CustomerRow } from '../customers/service.js';

/** Server-rendered hosted verification page: plain HTML and a little vanilla JS, nothing external. */
export interface PageModel {
  nonce: string;
  state: 'expired' | 'init' | 'pending' | 'manual_review' | 'approved' | 'rejected';
  level?: string;
  customerType?: 'individual' | 'business';
  uploaded?: string[];
  persons?: number;
}

export async function associatedPersonsCount(db: Queryable, customer: CustomerRow): Promise<number> {
  return customer.type === 'business' ? (await associatedPersons(db, customer.id)).length : 0;
}

const MESSAGES: Record<PageModel['state'], string> = {
  expired: 'This verification link is unknown or has expired. Ask for a new link.',
  init: 'Upload your documents, then submit them for verification.',
  pending: 'Your documents are being reviewed.',
  manual_review: 'Your documents are being reviewed by our team.',
  approved: 'Your identity has been verified. You can close this page.',
  rejected: 'Your verification was not successful. You may upload new documents and submit again.',
};

function docOptions(type: PageModel['customerType'], level: string | undefined): string[] {
  if (type === 'business') return ['REGISTRATION_CERTIFICATE'];
  return ['PASSPORT', 'ID_CARD', 'DRIVERS', 'SELFIE', ...(level === 'intermediate' ? ['PROOF_OF_ADDRESS'] : [])];
}

const SCRIPT = `
const base = location.pathname.replace(/\\/+$/, '');
const out = document.getElementById('out');
const show = (text) => { out.textContent = text; };
async function call(path, body) {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body || {}) });
  const json = await res.json().catch(() => ({ error: { message: 'Unexpected response' } }));
  if (!res.ok) throw new Error((json.error && json.error.message) + ((json.error && json.error.details || []).map((d) => ' · ' + d.field + ': ' + d.message).join('')));
  return json.data;
}
document.getElementById('upload').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const f = ev.target;
  const file = f.file.files[0];
  if (!file) return show('Choose a file first.');
  const reader = new FileReader();
  reader.onload = async () => {
    const metadata = { idDocType: f.type.value, country: f.country.value.trim().toUpperCase() };
    if (f.side.value && f.type.value !== 'SELFIE') metadata.idDocSubType = f.side.value;
    if (f.number.value.trim()) metadata.number = f.number.value.trim();
    try {
      const data = await call('/documents', { metadata, filename: file.name, content: String(reader.result) });
      const li = document.createElement('li');
      li.textContent = data.document_type + ' (' + file.name + ')';
      document.getElementById('docs').appendChild(li);
      show('Uploaded.');
      f.reset();
    } catch (e) { show(e.message); }
  };
  reader.readAsDataURL(file);
});
document.getElementById('submit').addEventListener('click', async () => {
  try {
    const s = await call('/submit');
    show(s.reviewStatus === 'completed' ? 'Result: ' + s.reviewResult.reviewAnswer : 'Submitted: your documents are being reviewed.');
  } catch (e) { show(e.message); }
});`;

export function renderVerifyPage(m: PageModel): string {
  const open = m.state === 'init' || m.state === 'rejected';
  const form = !open
    ? ''
    : `<form id="upload">
  <label>Document <select name="type">${docOptions(m.customerType, m.level)
    .map((o) => `<option>${o}</option>`)
    .join('')}</select></label>
  <label>Side <select name="side"><option value="FRONT_SIDE">Front</option><option value="BACK_SIDE">Back</option><option value="">n/a</option></select></label>
  <label>Issuing country (3 letters, e.g. NGA) <input name="country" required maxlength="3" pattern="[A-Za-z]{3}"></label>
  <label>Document number <input name="number" maxlength="50"></label>
  <label>File (JPEG, PNG or PDF, max 10 MB) <input type="file" name="file" accept="image/jpeg,image/png,application/pdf" required></label>
  <button>Upload</button>
</form>
<h2>Uploaded</h2>
<ul id="docs">${(m.uploaded ?? []).map((d) => `<li>${escapeHtml(d)}</li>`).join('')}</ul>
${m.persons ? `<p>Every one of the ${m.persons} associated persons must pass before the business passes.</p>` : ''}
<button id="submit">Submit for verification</button>
<p id="out" role="status"></p>
<script nonce="${m.nonce}">${SCRIPT}</script>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Identity verification</title>
<style nonce="${m.nonce}">body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem}label{display:block;margin:.6rem 0}input,select,button{font:inherit;margin-top:.2rem}button{padding:.4rem 1rem}</style>
</head><body>
<h1>Identity verification${m.level ? ` <small>(${escapeHtml(m.level)})</small>` : ''}</h1>
<p>${MESSAGES[m.state]}</p>
${form}
</body></html>`;
}
