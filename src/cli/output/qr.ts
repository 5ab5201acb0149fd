/** Which terminal background the code is drawn for: the printed blocks are the light modules on a dark one, the dark modules on a light one. */
export type QrStyle = 'dark' | 'light';
export const QR_STYLES: QrStyle[] = ['dark', 'light'];

/** The quiet zone the QR standard asks for, in modules: without it many readers find no code. */
const QUIET = 4;

/**
 * A terminal QR code of `text`, two module rows per line (▀ ▄ █), with a full
 * quiet zone. Only the printed blocks have a colour, the terminal's foreground,
 * so the code is drawn for the terminal's background: `dark` prints the light
 * modules (and the quiet zone) as blocks, `light` prints the dark ones.
 */
export async function renderQr(text: string, style: QrStyle = 'dark'): Promise<string> {
  const [{ default: QRCode }, { default: levels }] = await Promise.all([
    import('qrcode-terminal/vendor/QRCode/index.js'),
    import('qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js'),
  ]);
  const qr = new QRCode(-1, levels.M);
  qr.addData(text);
  qr.make();
  const n = qr.getModuleCount();
  const size = n + 2 * QUIET;
  const dark = (row: number, col: number): boolean => {
    const r = row - QUIET;
    const c = col - QUIET;
    return r >= 0 && c >= 0 && r < n && c < n && qr.isDark(r, c);
  };
  const printed = (row: number, col: number): boolean => row < size && (style === 'dark' ? !dark(row, col) : dark(row, col));
  const lines: string[] = [];
  for (let row = 0; row < size; row += 2) {
    let line = '';
    for (let col = 0; col < size; col++) {
      const top = printed(row, col);
      const bottom = printed(row + 1, col);
      line += top && bottom ? '█' : top ? '▀' : bottom ? '▄' : ' ';
    }
    lines.push(line.trimEnd());
  }
  return lines.join('\n');
}
