import { describe, expect, it } from 'vitest';
import { csvRecord } from '../../../src/ops/requests/csv.js';

describe('CSV records', () => {
  it('RFC 4180: CRLF after each record; a comma, quote, CR or LF quotes the field, its quotes doubled', () => {
    expect(csvRecord(['a', '', 'b c'])).toBe('a,,b c\r\n');
    expect(csvRecord(['x,y', 'say "hi"', 'two\nlines', 'cr\ronly'])).toBe('"x,y","say ""hi""","two\nlines","cr\ronly"\r\n');
    expect(csvRecord(['ünïcode €'])).toBe('ünïcode €\r\n');
  });

  it('a semicolon quotes the field too: Excel in a locale whose list separator is ";" splits on it', () => {
    expect(csvRecord(['order;42', 'plain'])).toBe('"order;42",plain\r\n');
  });

  it('a field a spreadsheet would run as a formula starts with an apostrophe (quoted when it must be)', () => {
    expect(csvRecord(['=1+1', '+1', '-3', '@SUM(A1)', '\tx', '\rx'])).toBe(`'=1+1,'+1,'-3,'@SUM(A1),'\tx,"'\rx"\r\n`);
    expect(csvRecord(['=HYPERLINK("http://evil.example","x")'])).toBe(`"'=HYPERLINK(""http://evil.example"",""x"")"\r\n`);
    expect(csvRecord(['a=b', '1-2', 'x@y'])).toBe('a=b,1-2,x@y\r\n');
  });
});
