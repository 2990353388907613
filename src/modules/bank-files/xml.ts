import { XMLBuilder, XMLParser, XMLValidator } from 'fast-xml-parser';
import { AppError } from '../../core/errors.js';
import { fileTooLarge } from './errors.js';

/**
 * XML in and out of bank files. Reading refuses a DOCTYPE or ENTITY declaration outright, before
 * any parsing (an entity-expansion or external-entity attack never reaches the parser), and
 * parses with entity processing off; only the five predefined entities and numeric character
 * references are decoded, by hand, as plain text. Writing goes through the builder, which escapes
 * every value: no document is ever assembled from strings.
 */

/** The largest file an import reads (statements of a busy day stay far below it). */
export const MAX_FILE_BYTES = 20 * 1024 * 1024;

export class BankFileError extends AppError {
  constructor(message: string, where?: string) {
    super('unprocessable', where ? `${message} (${where})` : message, where ? [{ field: where, code: 'invalid', message }] : []);
  }
}

/** Elements that may repeat in the messages we read: always parsed as arrays. */
const REPEATED = new Set([
  'Ntfctn',
  'Stmt',
  'Ntry',
  'NtryDtls',
  'TxDtls',
  'Bal',
  'OrgnlPmtInfAndSts',
  'TxInfAndSts',
  'StsRsnInf',
  'Ustrd',
  'AddtlInf',
]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  processEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  removeNSPrefix: true,
  allowBooleanAttributes: false,
  isArray: (name) => REPEATED.has(name),
});

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', format: true, suppressEmptyNode: true });

export interface ParsedDocument {
  namespace: string;
  root: Record<string, unknown>;
}

/** Line number (1-based) of a character offset, for error messages. */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Parses a bank file safely, or refuses it whole with the line of the fault. */
export function parseBankXml(input: Buffer | string): ParsedDocument {
  const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
  if (size > MAX_FILE_BYTES) {
    throw fileTooLarge('The file', MAX_FILE_BYTES);
  }
  let text = typeof input === 'string' ? input : input.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.includes('\uFFFD')) throw new BankFileError('The file is not UTF-8 text', `line ${lineOf(text, text.indexOf('\uFFFD'))}`);
  const declaration = /<!(DOCTYPE|ENTITY|ELEMENT|ATTLIST)/i.exec(text);
  if (declaration) {
    throw new BankFileError(
      `The file declares <!${declaration[1]!.toUpperCase()}>: DTDs and entities are refused`,
      `line ${lineOf(text, declaration.index)}`,
    );
  }
  if (!/^\s*</.test(text)) throw new BankFileError('The file is not XML', 'line 1');
  const valid = XMLValidator.validate(text, { allowBooleanAttributes: false });
  if (valid !== true) throw new BankFileError(`The file is not well-formed XML: ${valid.err.msg}`, `line ${valid.err.line}`);
  const rootTag = /<(?:([\w.-]+):)?Document\b([^>]*)>/.exec(text);
  if (!rootTag) throw new BankFileError('The root element is not an ISO 20022 Document', 'line 1');
  const prefix = rootTag[1];
  const nsAttr = new RegExp(`xmlns${prefix ? `:${prefix}` : ''}\\s*=\\s*["']([^"']*)["']`).exec(rootTag[2]!);
  const parsed = parser.parse(text) as Record<string, unknown>;
  const root = parsed.Document;
  if (!root || typeof root !== 'object') throw new BankFileError('The root element is not an ISO 20022 Document', 'line 1');
  return { namespace: nsAttr?.[1] ?? '', root: root as Record<string, unknown> };
}

const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the predefined entities and numeric character references of a text value (nothing else expands). */
export function decodeText(value: string): string {
  return value.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return PREDEFINED[ref]!;
  });
}

/** Builds an ISO 20022 document (with its XML declaration) from a plain object tree. */
export function buildBankXml(namespace: string, body: Record<string, unknown>): string {
  return builder.build({
    '?xml': { '@_version': '1.0', '@_encoding': 'UTF-8' },
    Document: { '@_xmlns': namespace, '@_xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance', ...body },
  }) as string;
}
