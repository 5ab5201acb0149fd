import jsqr from 'jsqr';

// jsqr is CommonJS: under NodeNext its typed default export sits on `.default`.
const jsQR = jsqr.default;

/**
 * Reads back a QR code printed in half blocks (█ both rows, ▀ top, ▄ bottom,
 * space none) as a terminal of the given theme shows it: the printed blocks
 * in the foreground colour (light on a dark theme, dark on a light one) on the
 * background colour. No inversion is attempted: a code that only reads
 * inverted does not scan on that theme.
 */
export function decodeTerminalQr(text: string, theme: 'dark' | 'light' = 'dark'): string | undefined {
  const lines = text.split('\n').filter((l) => /[█▀▄]/.test(l));
  if (lines.length === 0) return undefined;
  const width = Math.max(...lines.map((l) => [...l].length));
  const rows: boolean[][] = [];
  for (const line of lines) {
    const chars = [...line.padEnd(width, ' ')];
    rows.push(chars.map((c) => c === '█' || c === '▀'));
    rows.push(chars.map((c) => c === '█' || c === '▄'));
  }
  const [background, foreground] = theme === 'dark' ? [0, 255] : [255, 0];
  const scale = 6;
  // The terminal around the code is its background: nothing of a quiet zone is given here.
  const margin = 2;
  const w = (width + margin * 2) * scale;
  const h = (rows.length + margin * 2) * scale;
  const pixels = new Uint8ClampedArray(w * h * 4).fill(background);
  for (let i = 3; i < pixels.length; i += 4) pixels[i] = 255;
  rows.forEach((row, y) =>
    row.forEach((printed, x) => {
      if (!printed) return;
      for (let dy = 0; dy < scale; dy++) {
        for (let dx = 0; dx < scale; dx++) {
          const i = (((y + margin) * scale + dy) * w + (x + margin) * scale + dx) * 4;
          pixels[i] = pixels[i + 1] = pixels[i + 2] = foreground;
        }
      }
    }),
  );
  return jsQR(pixels, w, h, { inversionAttempts: 'dontInvert' })?.data;
}
