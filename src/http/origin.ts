import { NanoPayError } from '../errors.js';

const FORM = 'an origin is scheme://host[:port], http or https, with no path, query or user (e.g. https://shop.example:8443)';

/**
 * The origin a browser sends in its Origin header for pages at `text`
 * (lower case, no default port), from what a user typed for --allow-origin.
 * Anything that is not an http(s) origin is refused (USAGE); `null` above
 * all: browsers send it from sandboxed iframes and local files of any site.
 */
export function parseOrigin(text: string): string {
  if (text.trim().toLowerCase() === 'null') {
    throw new NanoPayError('USAGE', '--allow-origin null is refused: browsers send "Origin: null" from sandboxed iframes and local files of any site, so it would let every web page call the agent', {
      hint: 'Name the origin of the page that calls the agent, e.g. --allow-origin https://shop.example',
    });
  }
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  const plain = /^https?:\/\/[^/?#@\s\\]+$/i.test(text) && url !== undefined;
  if (!plain || url === undefined || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    const guess = url !== undefined && ['http:', 'https:'].includes(url.protocol) ? url.origin : undefined;
    throw new NanoPayError('USAGE', `--allow-origin "${text}" is not an origin: ${FORM}`, guess === undefined ? {} : { hint: `Did you mean --allow-origin ${guess}?` });
  }
  return url.origin;
}
