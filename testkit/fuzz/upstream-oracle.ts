/**
 * Judges, with the proxy's own route matcher and validator, what may reach the upstream and
 * what the proxy may answer itself (pure: no I/O). The fuzz properties (./properties.ts) use it.
 *
 * An upstream request is fine when it is a request of one of the 13 routes as the proxy forwards
 * it (the validator accepts it and gives back the same request: canonical, but with the client's
 * digits and until_block text), input a route leaves to the passthrough, or a passthrough path under the public
 * prefixes with no dot segments (raw or `%2e`), backslashes or doubled slashes. A path the
 * upstream's router reads as one of the 13 routes (it percent-decodes before matching, as
 * `decodeURI` does) is held to the first rule: otherwise a route would reach it unvalidated.
 */
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { validateRequest } from '../../src/routes/validate.js';
import type { ErrorReply } from '../../src/errors.js';

/** The upstream's public surface (issue 8's default passthrough list). */
export const PASSTHROUGH_PREFIXES = ['/extended', '/v1/', '/v2/', '/v3/', '/rosetta/', '/extended/v1/ws', '/socket.io/'] as const;

export type UpstreamVerdict =
  | { ok: true; as: 'route'; routeId: string }
  | { ok: true; as: 'passthrough' }
  /** `kind` is short and stable (it groups failures); `detail` says what exactly was wrong. */
  | { ok: false; kind: string; detail: string };

const matchRoute = createRouteMatcher(ROUTES);

function splitTarget(url: string): { path: string; query: string } {
  const mark = url.indexOf('?');
  return mark < 0 ? { path: url, query: '' } : { path: url.slice(0, mark), query: url.slice(mark + 1) };
}

/** The same request: same path, same query pairs in any order (tx/multiple puts `tx_id` first). */
function sameRequest(a: string, b: string): boolean {
  const x = splitTarget(a);
  const y = splitTarget(b);
  const pairs = (query: string) =>
    query
      .split('&')
      .filter((pair) => pair !== '')
      .sort()
      .join('&');
  return x.path === y.path && pairs(x.query) === pairs(y.query);
}

/**
 * How the upstream's router (find-my-way) reads a path: percent-decoded, except reserved
 * characters (as decodeURI) and `%25`, so an encoded `%` never decodes twice; undefined when it
 * cannot decode it (the upstream answers 400).
 */
function upstreamReading(path: string): string | undefined {
  try {
    return decodeURI(path.replace(/%25/g, '%2525'));
  } catch {
    return undefined;
  }
}

const isDotSegment = (segment: string): boolean => /^\.{1,2}$/.test(segment.replace(/%2e/gi, '.'));

export function judgeUpstreamRequest(url: string): UpstreamVerdict {
  if (!url.startsWith('/')) return { ok: false, kind: 'not-origin-form', detail: `upstream asked for ${JSON.stringify(url)}` };
  const { path, query } = splitTarget(url);

  const match = matchRoute(path);
  if (match.kind === 'bad-url')
    return { ok: false, kind: 'undecodable-route', detail: `route path ${JSON.stringify(path)} the proxy cannot decode reached the upstream` };
  if (match.kind === 'match') {
    const outcome = validateRequest(match.route, match.params, query);
    // Input a route leaves to the passthrough (route 11's address with a suffix) goes as sent.
    if (outcome.kind === 'passthrough') return { ok: true, as: 'passthrough' };
    if (outcome.kind !== 'request') {
      const answer = outcome.kind === 'error' ? `${outcome.error.status} ${outcome.error.body}` : `redirect to ${outcome.location}`;
      return { ok: false, kind: `unvalidated:${match.route.id}`, detail: `${JSON.stringify(url)} reached the upstream; the validator answers ${answer}` };
    }
    if (!sameRequest(url, outcome.request.upstreamPath)) {
      return {
        ok: false,
        kind: `not-canonical:${match.route.id}`,
        detail: `${JSON.stringify(url)} reached the upstream; its canonical form is ${JSON.stringify(outcome.request.upstreamPath)}`,
      };
    }
    return { ok: true, as: 'route', routeId: match.route.id };
  }

  const reading = upstreamReading(path);
  const readAs = reading === undefined || reading === path ? undefined : matchRoute(reading);
  if (readAs && readAs.kind === 'match') {
    return {
      ok: false,
      kind: `route-read-upstream:${readAs.route.id}`,
      detail: `${JSON.stringify(url)} passed through; the upstream reads it as route ${readAs.route.id} (${JSON.stringify(reading)})`,
    };
  }
  if (!PASSTHROUGH_PREFIXES.some((prefix) => path.startsWith(prefix))) {
    return { ok: false, kind: 'passthrough-prefix', detail: `${JSON.stringify(url)} is outside the public prefixes` };
  }
  if (path.includes('\\')) return { ok: false, kind: 'passthrough-backslash', detail: `${JSON.stringify(url)} has a backslash` };
  if (path.includes('//')) return { ok: false, kind: 'passthrough-double-slash', detail: `${JSON.stringify(url)} has a doubled slash` };
  if (path.split('/').some(isDotSegment)) return { ok: false, kind: 'passthrough-dot-segment', detail: `${JSON.stringify(url)} has a dot segment` };
  return { ok: true, as: 'passthrough' };
}

/**
 * The answer the proxy gives itself, without asking, where the upstream's handler would give
 * the same for this input; the only 5xx of that kind is the 500 for a negative block height
 * (docs/caching-and-freshness.md "Byte identity and validation"). Undefined for anything that is not a route.
 */
export function ownRouteAnswer(target: string): ErrorReply | undefined {
  if (!target.startsWith('/')) return undefined;
  const { path, query } = splitTarget(target);
  const match = matchRoute(path);
  if (match.kind !== 'match') return undefined;
  const outcome = validateRequest(match.route, match.params, query);
  return outcome.kind === 'error' ? outcome.error : undefined;
}

/**
 * ownRouteAnswer for the target as sent and for a lenient normalisation of it (authority of an
 * absolute form dropped, unreserved characters decoded, backslashes as slashes, dot segments
 * resolved, slashes collapsed):
 * a proxy that normalises a target into a route answers as that route does. Lenient on purpose:
 * it only widens the one exception to "no 5xx of the proxy's own".
 */
export function ownRouteAnswers(target: string): ErrorReply[] {
  const answers = [ownRouteAnswer(target)];
  const { path, query } = splitTarget(target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?]*/i, ''));
  try {
    const unreserved = path.replace(/%([0-9a-f]{2})/gi, (escape, hex: string) => {
      const char = String.fromCharCode(Number.parseInt(hex, 16));
      return /[A-Za-z0-9._~-]/.test(char) ? char : escape;
    });
    const resolved = new URL(unreserved.replace(/\\/g, '/').replace(/\/{2,}/g, '/'), 'http://fuzz.invalid').pathname;
    answers.push(ownRouteAnswer(`${resolved}${query ? `?${query}` : ''}`));
  } catch {
    // Not a path WHATWG URL can resolve: only the target as sent counts.
  }
  return answers.filter((answer): answer is ErrorReply => answer !== undefined);
}
