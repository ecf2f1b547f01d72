/**
 * The operator's headers on every request to an upstream: reads and tip polls (client.ts),
 * passthrough and WebSocket upgrades (src/http/). One pure function decides them, so every
 * path sends the same credentials. Precedence, most specific last: `upstream.headers` for all
 * upstreams, then `x-api-key` from UPSTREAM_API_KEY (`upstream.apiKey`), then
 * `upstream.headersByUrl[<that upstream>]`.
 */
export interface OutgoingHeaderSettings {
  apiKey: string | null;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** Keyed by upstream origin (config.ts normalises the configured URLs); lower-case names. */
  headersByUrl: Record<string, Record<string, string>>;
}

export const API_KEY_HEADER = 'x-api-key';

/**
 * Names an operator may not set: hop-by-hop headers and Host belong to the connection, which
 * undici manages; the length and framing headers to the body; conditional, range and encoding
 * headers would change what the upstream answers (an If-None-Match on every request would turn
 * answers into 304s the proxy never asked for; a gzip Accept-Encoding would send bodies the
 * proxy does not decode).
 */
const REFUSED = new Map<string, string>([
  ...['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'].map(
    (name) => [name, 'a hop-by-hop header'] as const,
  ),
  ['host', 'set from the upstream URL'],
  ['content-length', 'describes the body'],
  ['expect', 'describes the body'],
  ...['if-none-match', 'if-match', 'if-modified-since', 'if-unmodified-since', 'if-range', 'range', 'accept-encoding'].map(
    (name) => [name, 'it would change what the upstream answers'] as const,
  ),
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Field values: visible characters, spaces and tabs (no CR, LF or NUL: no header injection).
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why a configured header cannot be sent, or undefined when it can. */
export function refusedHeader(name: string, value: string): string | undefined {
  if (!TOKEN.test(name)) return `"${name}" is not a valid header name`;
  const reason = REFUSED.get(name.toLowerCase());
  if (reason) return `"${name}" may not be configured (${reason})`;
  if (!FIELD_VALUE.test(value)) return `the value of "${name}" contains a control character`;
  return undefined;
}

/** The headers every request to `origin` carries, before the request's own. */
export function upstreamHeadersFor(origin: string, settings: OutgoingHeaderSettings): Record<string, string> {
  const headers: Record<string, string> = { ...settings.headers };
  if (settings.apiKey !== null) headers[API_KEY_HEADER] = settings.apiKey;
  return { ...headers, ...settings.headersByUrl[origin] };
}
