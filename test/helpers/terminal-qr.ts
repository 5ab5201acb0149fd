import jsqr from 'jsqr';

// jsqr is CommonJS: under NodeNext its typed default export sits on `.default`.
const jsQR = jsqr.default;

/**
 * Reads back a QR code printed by qrcode-terminal in small mode: each character
 * holds two module rows (█ both, ▀ top, ▄ bottom, space none).
 */
export function decodeTerminalQr(text: string): string | undefined {
  const lines = text.split('\n').filter((l) => /[█▀▄]/.test(l));
  if (lines.length === 0) return undefined;
  const width = Math.max(...lines.map((l) => [...l].length));
  const rows: boolean[][] = [];
  for (const line of lines) {
    const chars = [...line.padEnd(width, ' ')];
    rows.push(chars.map((c) => c === '█' || c === '▀'));
    rows.push(chars.map((c) => c === '█' || c === '▄'));
  }
  const scale = 6;
  const margin = 4;
  const w = (width + margin * 2) * scale;
  const h = (rows.length + margin * 2) * scale;
  const pixels = new Uint8ClampedArray(w * h * 4).fill(255);
  rows.forEach((row, y) =>
    row.forEach((filled, x) => {
      // Printed blocks are the light modules (the code is drawn for a dark terminal).
      if (filled) return;
      for (let dy = 0; dy < scale; dy++) {
        for (let dx = 0; dx < scale; dx++) {
          const i = (((y + margin) * scale + dy) * w + (x + margin) * scale + dx) * 4;
          pixels[i] = pixels[i + 1] = pixels[i + 2] = 0;
        }
      }
    }),
  );
  return jsQR(pixels, w, h, { inversionAttempts: 'attemptBoth' })?.data;
}
