/**
 * One reading of every request target, decided once before routing: the proxy routes, caches
 * and forwards the same path. Readers disagree about targets that are not plain origin-form
 * paths (a WHATWG URL parser turns `\` into `/` and resolves `%2e%2e`; the upstream's router,
 * find-my-way, does neither but decodes `%65` to `e` before matching; a CDN in front of it may
 * merge `//`), so such targets are either rewritten into the one form every reader agrees on,
 * or refused with the upstream's own 400 (FST_ERR_BAD_URL):
 *
 * - absolute-form (`GET http://host/path`, RFC 9112 §3.2.2): the authority is dropped, the
 *   path and query kept; other forms (`*`, authority-form, a relative path) are refused;
 * - percent-encoded unreserved characters (RFC 3986 §6.2.2.2: `%65`, `%2E`, `%7e`) are
 *   decoded in the path, as the upstream's router decodes them before matching a route;
 * - dot segments (`.`, `..`, also as `%2e`) are resolved (RFC 3986 §5.2.4, clamped at `/`);
 * - empty segments (`//`) are merged;
 * - a backslash in the path is refused: one reader sees a separator, another a character,
 *   and no API path contains one. `%5C` stays: every reader keeps it a byte of its segment;
 * - malformed percent-encoding in the path (`%zz`, invalid UTF-8) is refused, as the upstream does;
 * - `#`, control characters, spaces and non-ASCII anywhere in the target are refused.
 * The query is kept byte for byte: the read routes validate it, the passthrough forwards it.
 */

export interface DecidedTarget {
  kind: 'target';
  /** The decided path and query: what routing sees and what reaches the upstream. */
  url: string;
  path: string;
  /** The query without its `?`; '' when there is none. */
  query: string;
}

export type TargetDecision =
  | DecidedTarget
  | {
      kind: 'refused';
      /** The target's path as sent, for the error message. */
      path: string;
    };

// A target that is already in its one form: origin-form, no `//`, `/.`, `%` or `\` in the path.
const NEEDS_DECISION = /^(?!\/)|\/\/|\/\.|%|\\/;
// Never part of a target on the wire: a fragment, spaces, control and non-ASCII characters.
const REFUSED_ANYWHERE = /[^\x21-\x7e]|#/;
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;
const PERCENT_TRIPLET = /%([0-9A-Fa-f]{2})/g;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const MALFORMED_PERCENT = /%(?![0-9A-Fa-f]{2})/;

const refused = (path: string): TargetDecision => ({ kind: 'refused', path });

function split(url: string): { path: string; query: string; hasQuery: boolean } {
  const mark = url.indexOf('?');
  return mark < 0 ? { path: url, query: '', hasQuery: false } : { path: url.slice(0, mark), query: url.slice(mark + 1), hasQuery: true };
}

function decodeUnreserved(path: string): string {
  return path.replace(PERCENT_TRIPLET, (triplet, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : triplet;
  });
}

/** Merges empty segments and resolves dot segments; a path that ended in a directory keeps its `/`. */
function resolveSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split('/');
  let endsInDirectory = false;
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i] as string;
    const last = i === segments.length - 1;
    if (segment === '' || segment === '.') endsInDirectory = last;
    else if (segment === '..') {
      out.pop();
      endsInDirectory = last;
    } else {
      out.push(segment);
      endsInDirectory = false;
    }
  }
  if (out.length === 0) return '/';
  return `/${out.join('/')}${endsInDirectory ? '/' : ''}`;
}

function isDecodable(path: string): boolean {
  if (MALFORMED_PERCENT.test(path)) return false;
  try {
    decodeURI(path);
    return true;
  } catch {
    return false;
  }
}

/** The one reading of `rawUrl` (a request's `req.url`), or why it is refused. */
export function decideTarget(rawUrl: string): TargetDecision {
  const raw = split(rawUrl);
  if (REFUSED_ANYWHERE.test(rawUrl)) return refused(raw.path);
  if (!NEEDS_DECISION.test(raw.path)) return { kind: 'target', url: rawUrl, path: raw.path, query: raw.query };
  // A backslash anywhere before the query: a WHATWG parser also ends an authority at one.
  if (raw.path.includes('\\')) return refused(raw.path);

  let originForm = rawUrl;
  if (!rawUrl.startsWith('/')) {
    const authority = ABSOLUTE_FORM.exec(rawUrl);
    if (!authority) return refused(raw.path);
    originForm = rawUrl.slice(authority[0].length);
    if (originForm === '' || originForm.startsWith('?')) originForm = `/${originForm}`;
    if (!originForm.startsWith('/')) return refused(raw.path);
  }
  const { path, query, hasQuery } = split(originForm);
  if (!isDecodable(path)) return refused(path);
  const decided = resolveSegments(decodeUnreserved(path));
  return { kind: 'target', url: hasQuery ? `${decided}?${query}` : decided, path: decided, query };
}
