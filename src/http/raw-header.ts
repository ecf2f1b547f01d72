/**
 * One request header read straight from `req.rawHeaders`. node:http builds `req.headers` the
 * first time it is read, lowercasing every name the client sent into a new object; the hit path
 * needs two headers (X-Request-Id, If-None-Match), so it reads them here and a hit never builds
 * that object (a browser sends a dozen headers or more). The value is what `req.headers` would
 * give for a header node joins when repeated (every header but its short list of single-valued
 * ones, Set-Cookie and Cookie): the values in order, joined with ", ".
 */
import type { IncomingMessage } from 'node:http';

/** `lowerName` must be lowercase and not one of node's single-valued headers (host, content-type, ...), Set-Cookie or Cookie. */
export function joinedHeader(req: IncomingMessage, lowerName: string): string | undefined {
  const raw = req.rawHeaders;
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length !== lowerName.length || (name !== lowerName && name.toLowerCase() !== lowerName)) continue;
    const next = raw[i + 1] as string;
    value = value === undefined ? next : `${value}, ${next}`;
  }
  return value;
}
