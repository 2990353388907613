/**
 * One CSV cell: RFC 4180 quoting, and a leading apostrophe on text a spreadsheet would run as a
 * formula (=, +, -, @, tab, carriage return) unless it is a number: descriptions and references
 * are client-supplied.
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  const safe = /^[=+\-@\t\r]/.test(text) && !/^-?\d/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export const csvRow = (cells: (string | number | null | undefined)[]) => `${cells.map(csvCell).join(',')}\r\n`;
