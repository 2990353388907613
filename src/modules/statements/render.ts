import type { Readable } from 'node:stream';
import { csvRow } from '../../lib/csv-cell.js';
import type { AccountResponse } from '../accounts/schema.js';

export interface Movement {
  id: string;
  date: string;
  type: string;
  description: string;
  reference: string | null;
  transaction_id: string | null;
  direction: 'credit' | 'debit';
  amount: string;
  balance_after: string;
}

export interface StatementHead {
  account_id: string;
  currency: string;
  business_name: string;
  account_holder: string;
  account_label: string;
  bank_details: AccountResponse['bank_details'];
  from: string;
  to: string;
  opening_balance: string;
  closing_balance: string;
  total_credits: string;
  total_debits: string;
  credit_count: number;
  debit_count: number;
}

/**
 * A statement as CSV, JSON or PDF, each written as its movements arrive (async iterables of
 * pages): only one page of movements is held at a time.
 */
type Pages = AsyncIterable<Movement[]>;

const CSV_COLUMNS = ['date', 'type', 'description', 'reference', 'transaction_id', 'debit', 'credit', 'balance'];

/** CSV: an opening_balance row, one row per movement with its running balance, a closing_balance row with the totals. */
export async function* csvStatement(head: StatementHead, pages: Pages): AsyncGenerator<string> {
  yield csvRow(CSV_COLUMNS);
  yield csvRow([head.from, 'opening_balance', 'Opening balance', null, null, null, null, head.opening_balance]);
  for await (const page of pages) {
    yield page
      .map((m) =>
        csvRow([
          m.date,
          m.type,
          m.description,
          m.reference,
          m.transaction_id,
          m.direction === 'debit' ? m.amount : null,
          m.direction === 'credit' ? m.amount : null,
          m.balance_after,
        ]),
      )
      .join('');
  }
  yield csvRow([head.to, 'closing_balance', 'Closing balance', null, null, head.total_debits, head.total_credits, head.closing_balance]);
}

/** JSON in the envelope: the head's fields, then `movements`, written member by member. */
export async function* jsonStatement(head: StatementHead, pages: Pages): AsyncGenerator<string> {
  yield `{"data":${JSON.stringify(head).slice(0, -1)},"movements":[`;
  let first = true;
  for await (const page of pages) {
    yield page.map((m) => `${first ? ((first = false), '') : ','}\n${JSON.stringify(m)}`).join('');
  }
  yield '\n]},"error":null}\n';
}

// A4 in points, one movement per fixed-height row so the page count is known before the first row.
const PAGE = { width: 595.28, height: 841.89, left: 40, right: 40 };
const ROW = 14;
const FIRST_PAGE_ROWS_TOP = 330;
const OTHER_PAGES_ROWS_TOP = 80;
const ROWS_BOTTOM = 790;
const rowsOn = (top: number) => Math.floor((ROWS_BOTTOM - top) / ROW);
const COLUMNS = [
  { label: 'Date', width: 88, align: 'left' as const },
  { label: 'Description', width: 197, align: 'left' as const },
  { label: 'Debit', width: 76, align: 'right' as const },
  { label: 'Credit', width: 76, align: 'right' as const },
  { label: 'Balance', width: 78, align: 'right' as const },
];

/** The pages a statement of `lines` rows (movements plus the opening and closing lines) takes. */
export function pdfPageCount(lines: number): number {
  const first = rowsOn(FIRST_PAGE_ROWS_TOP);
  return lines <= first ? 1 : 1 + Math.ceil((lines - first) / rowsOn(OTHER_PAGES_ROWS_TOP));
}

/** The standard fonts encode WinAnsi only: anything else is shown as '?'. */
const printable = (text: string) => text.replace(/[^\x20-\x7e\u00a0-\u00ff]/g, '?');

function fit(doc: PDFKit.PDFDocument, text: string, width: number): string {
  let t = printable(text);
  if (doc.widthOfString(t) <= width) return t;
  while (t.length > 1 && doc.widthOfString(`${t}...`) > width) t = t.slice(0, -1);
  return `${t}...`;
}

/** The document being drawn, and where its rows have got to. */
interface Sheet {
  doc: PDFKit.PDFDocument;
  head: StatementHead;
  total: number;
  pageNo: number;
  y: number;
}

function drawFooter({ doc, head, pageNo, total }: Sheet): void {
  doc
    .font('Helvetica')
    .fontSize(8)
    .fillColor('#555555')
    .text(`Page ${pageNo} of ${total}`, PAGE.left, PAGE.height - 36, {
      width: PAGE.width - PAGE.left - PAGE.right,
      align: 'right',
      lineBreak: false,
    })
    .text(`${head.business_name} - account ${head.bank_details.account_number} - ${head.currency}`, PAGE.left, PAGE.height - 36, {
      lineBreak: false,
    })
    .fillColor('#000000');
}

function drawColumnHeads(doc: PDFKit.PDFDocument, top: number): void {
  let x = PAGE.left;
  doc.font('Helvetica-Bold').fontSize(9);
  for (const c of COLUMNS) {
    doc.text(c.label, x, top, { width: c.width, align: c.align, lineBreak: false });
    x += c.width;
  }
  doc
    .moveTo(PAGE.left, top + 12)
    .lineTo(PAGE.width - PAGE.right, top + 12)
    .stroke();
  doc.font('Helvetica').fontSize(9);
}

/** One row; a row that would cross the bottom starts the next page (footer and column heads first). */
function drawRow(sheet: Sheet, cells: string[], bold = false): void {
  const { doc } = sheet;
  if (sheet.y + ROW > ROWS_BOTTOM) {
    doc.addPage();
    sheet.pageNo++;
    drawFooter(sheet);
    drawColumnHeads(doc, OTHER_PAGES_ROWS_TOP - 18);
    sheet.y = OTHER_PAGES_ROWS_TOP;
  }
  let x = PAGE.left;
  doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(9);
  cells.forEach((cell, i) => {
    const c = COLUMNS[i]!;
    doc.text(fit(doc, cell, c.width - 4), x, sheet.y, { width: c.width, align: c.align, lineBreak: false });
    x += c.width;
  });
  sheet.y += ROW;
}

function drawLabel(doc: PDFKit.PDFDocument, text: string, value: string, top: number, left = PAGE.left): void {
  doc.font('Helvetica-Bold').fontSize(9).text(text, left, top, { width: 110, lineBreak: false });
  doc
    .font('Helvetica')
    .fontSize(9)
    .text(printable(value), left + 110, top, { width: 150, lineBreak: false });
}

function drawHeader(doc: PDFKit.PDFDocument, head: StatementHead): void {
  doc.font('Helvetica-Bold').fontSize(16).text(printable(head.business_name), PAGE.left, 40, { lineBreak: false });
  doc.font('Helvetica').fontSize(12).text('Account statement', PAGE.left, 62, { lineBreak: false });
}

/** The holder and bank details, left column: a detail the account does not have is left out. */
function drawDetails(doc: PDFKit.PDFDocument, head: StatementHead): void {
  const b = head.bank_details;
  const details: [string, string | null][] = [
    ['Account holder', head.account_holder],
    ['Account', head.account_label],
    ['Account number', b.account_number],
    ['Bank', b.bank_name],
    ['Bank code', b.bank_code],
    ['Sort code', b.sort_code],
    ['Routing number', b.routing_number],
    ['IBAN', b.iban],
    ['BIC', b.bic],
    ['Currency', head.currency],
  ];
  let top = 95;
  for (const [k, v] of details.filter(([, v]) => v)) {
    drawLabel(doc, k, v!, top);
    top += 13;
  }
}

/** The period and the totals, right column. */
function drawSummary(doc: PDFKit.PDFDocument, head: StatementHead, generatedAt: Date): void {
  const right = PAGE.left + 270;
  const summary: [string, string][] = [
    ['Period from', head.from],
    ['Period to', head.to],
    ['Opening balance', head.opening_balance],
    ['Total credits', `${head.total_credits} (${head.credit_count})`],
    ['Total debits', `${head.total_debits} (${head.debit_count})`],
    ['Closing balance', head.closing_balance],
    ['Generated', generatedAt.toISOString()],
  ];
  summary.forEach(([k, v], i) => drawLabel(doc, k, v, 95 + i * 13, right));
}

const minute = (iso: string) => iso.slice(0, 16).replace('T', ' ');

function movementCells(m: Movement): string[] {
  const d = m.description + (m.reference ? ` (${m.reference})` : '');
  return [minute(m.date), d, m.direction === 'debit' ? m.amount : '', m.direction === 'credit' ? m.amount : '', m.balance_after];
}

/** The opening line, every movement, the closing line with the totals; then ends the document. */
async function drawRows(sheet: Sheet, pages: Pages): Promise<void> {
  const { head } = sheet;
  const stream = sheet.doc as unknown as Readable;
  drawRow(sheet, [minute(head.from), 'Opening balance', '', '', head.opening_balance], true);
  for await (const page of pages) {
    for (const m of page) drawRow(sheet, movementCells(m));
    // The reader drains the document: wait for it before reading the next page of movements.
    while (stream.readableLength > 1 << 20) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  drawRow(sheet, [minute(head.to), 'Closing balance', head.total_debits, head.total_credits, head.closing_balance], true);
  sheet.doc.end();
}

/**
 * The PDF: business, account holder and bank details, period, opening balance, every movement
 * with its running balance, totals, closing balance, "Page n of N" on each page. The document is
 * a stream: each page is written out when the next one starts, and the caller (the route) reads
 * it while this writes, so only the current page and one page of movements are in memory.
 */
export async function pdfStatement(head: StatementHead, pages: Pages, generatedAt: Date): Promise<PDFKit.PDFDocument> {
  // Loaded on first use: pdfkit and its fonts hold memory that only PDF statements need.
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: 40, bottom: 20, left: PAGE.left, right: PAGE.right },
    info: { Title: `Statement ${head.from.slice(0, 10)} to ${head.to.slice(0, 10)}`, Author: head.business_name, Producer: 'statements' },
  });
  const sheet: Sheet = { doc, head, total: pdfPageCount(head.credit_count + head.debit_count + 2), pageNo: 1, y: 0 };
  // Page 1: the parties, the period and the summary.
  drawHeader(doc, head);
  drawDetails(doc, head);
  drawSummary(doc, head, generatedAt);
  drawFooter(sheet);
  drawColumnHeads(doc, FIRST_PAGE_ROWS_TOP - 18);
  sheet.y = FIRST_PAGE_ROWS_TOP;
  drawRows(sheet, pages).catch((err: unknown) => (doc as unknown as Readable).destroy(err as Error));
  return doc;
}
