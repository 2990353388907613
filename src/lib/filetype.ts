/**
 * File type by content (magic bytes), never by name: a renamed executable stays unrecognised.
 * Only the three types KYC accepts are known.
 */
export type SniffedType = 'image/png' | 'image/jpeg' | 'application/pdf';

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const PDF = [0x25, 0x50, 0x44, 0x46, 0x2d]; // "%PDF-"

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return bytes.length >= magic.length && magic.every((b, i) => bytes[i] === b);
}

export function sniffFileType(bytes: Uint8Array): SniffedType | undefined {
  if (startsWith(bytes, PNG)) return 'image/png';
  if (startsWith(bytes, JPEG)) return 'image/jpeg';
  if (startsWith(bytes, PDF)) return 'application/pdf';
  return undefined;
}

/** The content types a file name's extension claims (`.jpg` and `.jpeg` are both JPEG). */
export function typeOfExtension(filename: string): SniffedType | undefined {
  const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase();
  if (ext === 'png') return 'image/png';
  if (ext === 'jpg' || ext === 'jpeg') return 'image/jpeg';
  if (ext === 'pdf') return 'application/pdf';
  return undefined;
}

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Strict base64 (standard alphabet, optional padding, whitespace ignored; a `data:` URI prefix
 * is accepted because browsers produce one). Returns undefined for anything else.
 */
export function decodeBase64Strict(text: string): Buffer | undefined {
  const body = text.replace(/^data:[a-z/+.-]+;base64,/i, '').replace(/\s+/g, '');
  if (body.length === 0 || !BASE64_RE.test(body) || body.length % 4 === 1) return undefined;
  const buf = Buffer.from(body, 'base64');
  // Round trip (ignoring padding) catches misplaced '=' and non-canonical trailing bits.
  if (buf.toString('base64').replace(/=+$/, '') !== body.replace(/=+$/, '')) return undefined;
  return buf;
}
