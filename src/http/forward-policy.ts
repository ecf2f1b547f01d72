/**
 * What the passthrough may forward, decided without I/O: which paths (the upstream's public
 * API, a setting), and which of a client's headers go with them. The upstream is a shared
 * node reached with the operator's credentials, so a client's own credentials and cookies
 * never travel on, and nothing outside the public API is reachable through the proxy.
 */
/** A request's headers as node:http parses them (names in lowercase). */
export type IncomingHttpHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * A prefix ending in `/` matches every path below it; any other prefix matches that exact
 * path and the paths below it (`/extended` matches `/extended` and `/extended/v1/...`, not
 * `/extendedx`). `path` is the decided path (request-target.ts), without its query.
 */
export function isAllowedPath(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix || path.startsWith(`${prefix}/`)));
}

/**
 * The client's headers that reach the upstream: content negotiation, the body's type,
 * conditional requests, CORS preflight, the user agent. Never Cookie, Authorization, X-API-Key
 * or anything else a client may use to speak for the operator or itself; never the body's
 * framing either (Content-Length, Transfer-Encoding): that is decided from what Node parsed,
 * by requestBodyFraming() below, so no header a client sends can change it.
 */
const FORWARDED_HEADERS = [
  'accept',
  // The passthrough streams bytes untouched, so a compressed answer reaches the client as sent.
  'accept-encoding',
  'accept-language',
  'content-type',
  'content-encoding',
  'if-none-match',
  'if-modified-since',
  'origin',
  'access-control-request-method',
  'access-control-request-headers',
  'user-agent',
] as const;

/** The WebSocket handshake's own headers (RFC 6455 §4.1), forwarded on upgrades only. */
const WEBSOCKET_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-protocol', 'sec-websocket-extensions'] as const;

export interface ForwardContext {
  /** The request id every log line of this request carries (the client's or a new one). */
  requestId: string;
  /** The client's address, appended to X-Forwarded-For. */
  clientAddress: string | undefined;
  /** A WebSocket upgrade: Upgrade/Connection and the Sec-WebSocket-* headers go on too. */
  upgrade: boolean;
  /** The operator's headers for the chosen upstream (x-api-key and configured ones): they win. */
  operatorHeaders: Readonly<Record<string, string>>;
}

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value.join(', ') : value);

const NONE_NAMED: ReadonlySet<string> = new Set();

/** Names the client's Connection header lists are hop-by-hop (RFC 9110 §7.6.1) and stay here. */
function connectionNamed(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const connection = single(headers.connection);
  if (connection === undefined) return NONE_NAMED;
  const named = new Set<string>();
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name) named.add(name);
  }
  return named;
}

/**
 * Methods whose requests carry no body upstream (RFC 9110 §9.3: a body on them has no defined
 * meaning, and the upstream's server would read one as the start of the next request if it came
 * unframed). A client's body on them is read and dropped here, never forwarded.
 */
const METHODS_WITHOUT_BODY = new Set(['GET', 'HEAD', 'TRACE', 'DELETE', 'OPTIONS']);

/**
 * How the body of the upstream request is framed: none; exactly the Content-Length Node parsed
 * the client's body with; or chunked, for a client body Node de-chunked. Never from Connection
 * (a client naming Content-Length there changes nothing), never both.
 */
export type BodyFraming = { kind: 'none' } | { kind: 'length'; length: string } | { kind: 'chunked' };

const NO_BODY: BodyFraming = { kind: 'none' };

export function requestBodyFraming(method: string, incoming: IncomingHttpHeaders): BodyFraming {
  if (METHODS_WITHOUT_BODY.has(method)) return NO_BODY;
  // Node refuses a request with both, or with a Transfer-Encoding that does not end in chunked.
  if (incoming['transfer-encoding'] !== undefined) return { kind: 'chunked' };
  const length = single(incoming['content-length']);
  return length === undefined ? NO_BODY : { kind: 'length', length };
}

/** The headers of the request the upstream gets for this client request (without framing: see requestBodyFraming). */
export function upstreamRequestHeaders(incoming: IncomingHttpHeaders, context: ForwardContext): Record<string, string> {
  const hopByHop = connectionNamed(incoming);
  const out: Record<string, string> = {};
  const copy = (name: string): void => {
    const value = single(incoming[name]);
    if (value !== undefined && !hopByHop.has(name)) out[name] = value;
  };
  for (const name of FORWARDED_HEADERS) copy(name);
  if (context.upgrade) {
    for (const name of WEBSOCKET_HEADERS) {
      const value = single(incoming[name]);
      if (value !== undefined) out[name] = value;
    }
    out.connection = 'Upgrade';
    out.upgrade = 'websocket';
  }
  // X-Forwarded-For is a chain: the client's claims stay, the address the proxy saw comes last.
  const chain = hopByHop.has('x-forwarded-for') ? undefined : single(incoming['x-forwarded-for']);
  if (context.clientAddress) out['x-forwarded-for'] = chain ? `${chain}, ${context.clientAddress}` : context.clientAddress;
  const proto = single(incoming['x-forwarded-proto']);
  out['x-forwarded-proto'] = proto === 'http' || proto === 'https' ? proto : 'http';
  const host = single(incoming.host);
  if (host !== undefined) out['x-forwarded-host'] = host;
  out['x-request-id'] = context.requestId;
  const operator = context.operatorHeaders;
  for (const name of Object.keys(operator)) out[name.toLowerCase()] = operator[name] as string;
  return out;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1): each connection has its own, the proxy's are Node's. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** A header list as res.writeHead takes it: each name (lowercase) followed by its value. */
export type HeaderList = Array<string | string[]>;

/**
 * The headers of the client's answer, as one list for res.writeHead (headers set one by one
 * with setHeader would send every one of them through Node's slower merging path): the
 * upstream answer's, without the upstream connection's hop-by-hop headers; Connection saying
 * whether the client's connection stays open (`keepAlive`: what node:http decided for it from
 * the client's request); then the proxy's own (`own`, a name-value list: the request id,
 * X-Cache, ratelimit-*), each unless the upstream's answer has a header of that name.
 */
export function clientResponseHeaders(
  upstream: Readonly<Record<string, string | string[] | undefined>>,
  keepAlive: boolean,
  own: readonly string[] = [],
): HeaderList {
  const named = connectionNamed(upstream);
  const kept = (name: string): boolean => upstream[name] !== undefined && !HOP_BY_HOP.has(name) && !named.has(name);
  const out: HeaderList = [];
  for (const name of Object.keys(upstream)) {
    const value = upstream[name];
    if (value !== undefined && kept(name)) out.push(name, value);
  }
  out.push('connection', keepAlive ? 'keep-alive' : 'close');
  for (let i = 0; i < own.length; i += 2) {
    const name = own[i] as string;
    if (!kept(name)) out.push(name, own[i + 1] as string);
  }
  return out;
}
