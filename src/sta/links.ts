import type { EntityDef } from './model.js';

/**
 * Every link the server writes is absolute on the route's public base, so that a client behind
 * the gateway can follow it as given.
 */

export const selfLink = (baseUrl: string, entity: EntityDef, id: number) => `${baseUrl}/${entity.set}(${id})`;

export const navigationLink = (baseUrl: string, entity: EntityDef, id: number, navigation: string) =>
  `${selfLink(baseUrl, entity, id)}/${navigation}`;

const decodedKey = (part: string) => {
  const key = part.split('=', 1)[0] ?? '';
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
};

/**
 * The next page of a request: its query string as the client wrote it (every option kept in its
 * own encoding) with `$skip` set to where this page ended.
 */
export function nextLinkFromQuery(url: string, rawQuery: string, nextSkip: number): string {
  const parts = rawQuery === '' ? [] : rawQuery.split('&').filter((part) => decodedKey(part) !== '$skip');
  parts.push(`$skip=${nextSkip}`);
  return `${url}?${parts.join('&')}`;
}
