/** A terminal QR code of `text` (half-height blocks, so it fits a screen). */
export async function renderQr(text: string): Promise<string> {
  const { default: qrcode } = await import('qrcode-terminal');
  return new Promise((resolve) => qrcode.generate(text, { small: true }, (code: string) => resolve(code)));
}
