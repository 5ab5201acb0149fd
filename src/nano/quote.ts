/**
 * Quotes what the user typed in an error message, unless it may be a secret
 * pasted in the wrong place (a 64/128-hex key or seed, a mnemonic) or is too
 * long to help: then it is only named.
 */
export function quote(input: unknown, what: string): string {
  if (typeof input !== 'string') return what;
  const s = input.trim();
  if (s.length > 80 || /^(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{128})$/.test(s) || s.split(/\s+/).length >= 12) return what;
  return `"${s}"`;
}
