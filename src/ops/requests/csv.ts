/**
 * CSV as RFC 4180 writes it and a spreadsheet opens it as is: fields separated
 * by commas, records ended by CRLF, a field with a comma, a double quote, CR or
 * LF in double quotes (its quotes doubled), and one with a semicolon too (Excel
 * splits on it where the locale's list separator is ";"), UTF-8 behind a byte order mark
 * (without one, Excel reads UTF-8 as its local code page).
 */

/** The byte order mark that tells a spreadsheet the file is UTF-8. */
export const CSV_BOM = '\uFEFF';

/**
 * A spreadsheet runs a cell that starts with one of these as a formula (CSV injection): order ids and metadata
 * come from the shop's customers, so such a field is written with a leading apostrophe, which shows it as text.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

function field(value: string): string {
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",;\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record, CRLF included. */
export function csvRecord(values: readonly string[]): string {
  return `${values.map(field).join(',')}\r\n`;
}
