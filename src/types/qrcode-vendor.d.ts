/** The QR encoder that ships inside qrcode-terminal (its renderer does not add a full quiet zone, so we draw our own). */
declare module 'qrcode-terminal/vendor/QRCode/index.js' {
  class QRCode {
    constructor(typeNumber: number, errorCorrectLevel: number);
    addData(data: string): void;
    make(): void;
    getModuleCount(): number;
    isDark(row: number, col: number): boolean;
  }
  export default QRCode;
}
declare module 'qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js' {
  const levels: { L: number; M: number; Q: number; H: number };
  export default levels;
}
