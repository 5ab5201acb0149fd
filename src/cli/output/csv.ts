/** One CSV record as RFC 4180 has it: fields with a comma, a quote or a line break quoted, quotes doubled; lines end in CRLF. */
export function csvRecord(fields: readonly (string | number | null | undefined)[]): string {
  return `${fields.map((field) => {
    const text = field === null || field === undefined ? '' : String(field);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  }).join(',')}\r\n`;
}
