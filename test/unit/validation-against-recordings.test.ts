/**
 * The proxy's own validation, checked against what a real upstream answered for the same
 * request (shared/fixtures/recorded-regtest.jsonl): the proxy must reject exactly what the
 * upstream rejects, with the same status and body bytes, and pass everything else through.
 */
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import type { RouteSpec } from '../../src/routes/route-spec.js';
import { validateRequest, type ValidationOutcome } from '../../src/routes/validate.js';
import { loadRecordings, splitUrl, type Recording } from '../../testkit/index.js';

interface RouteMatch {
  route: RouteSpec;
  params: Record<string, string>;
}

const matchPath = createRouteMatcher(ROUTES);

/** The route the app would dispatch the path to (the app's own matcher). */
function matchRoute(pathname: string): RouteMatch | undefined {
  const found = matchPath(pathname);
  return found.kind === 'match' ? { route: found.route, params: found.params } : undefined;
}

interface Case {
  rec: Recording;
  match: RouteMatch;
  query: string;
}

function outcomeOf({ match, query }: Case): ValidationOutcome {
  return validateRequest(match.route, match.params, query);
}

const ALL = loadRecordings();
const CASES: Case[] = ALL.flatMap((rec) => {
  const { path, query } = splitUrl(rec.path);
  const match = matchRoute(path);
  return match ? [{ rec, match, query }] : [];
});
const byStatus = (status: number): Case[] => CASES.filter((c) => c.rec.status === status);

const ERRORS_400 = byStatus(400);
const REDIRECTS = byStatus(302);
const PASSED = CASES.filter((c) => c.rec.status === 200 || c.rec.status === 404);
const ERRORS_500 = byStatus(500);

describe('route matching helper', () => {
  it('matches static routes before parametric ones and decodes segments', () => {
    expect(matchRoute('/extended/v1/tx/multiple')?.route.id).toBe('tx_multiple');
    expect(matchRoute('/extended/v1/tx/events')?.route.id).toBe('tx_events');
    expect(matchRoute('/extended/v1/tx/mempool/stats')?.route.id).toBe('mempool_stats');
    expect(matchRoute('/extended/v1/tx/0xab')?.route.id).toBe('tx_by_id');
    expect(matchRoute('/extended/v1/contract/a%2Fb/events')?.params).toEqual({ contract_id: 'a/b' });
    expect(matchRoute('/extended')).toBeUndefined();
    expect(matchRoute('/extended/v1/no-such-route')).toBeUndefined();
  });

  it(`maps most of the ${ALL.length} recordings to a route`, () => {
    // Only /extended, /extended/ and the two unknown routes are outside the 13 routes.
    expect(ALL.length - CASES.length).toBe(4);
    for (const id of new Set(ROUTES.map((r) => r.id))) {
      expect(
        CASES.some((c) => c.match.route.id === id),
        id,
      ).toBe(true);
    }
  });

  it('has recordings of every kind the tests below rely on', () => {
    expect(ERRORS_400.length).toBe(32);
    expect(REDIRECTS.length).toBe(136);
    expect(PASSED.length).toBe(1298);
    expect(ERRORS_500.length).toBe(2);
  });
});

describe(`recorded 400s (${ERRORS_400.length}): the proxy rejects them with the upstream's exact body`, () => {
  it.each(ERRORS_400.map((c) => [c.rec.path, c] as const))('%s', (_path, c) => {
    const outcome = outcomeOf(c);
    expect(outcome).toEqual({ kind: 'error', error: { status: 400, body: c.rec.body } });
  });
});

describe(`recorded 302s (${REDIRECTS.length}): the proxy gives the same redirect`, () => {
  it.each(REDIRECTS.map((c) => [c.rec.path, c] as const))('%s', (_path, c) => {
    const location = c.rec.headers.location;
    expect(location).toBeDefined();
    expect(outcomeOf(c)).toEqual({ kind: 'redirect', location });
  });
});

describe(`recorded 200s and 404s (${PASSED.length}): the proxy passes them on as requests`, () => {
  it.each(PASSED.map((c) => [c.rec.status, c.rec.path, c] as const))('%i %s', (_status, _path, c) => {
    const outcome = outcomeOf(c);
    expect(outcome.kind, JSON.stringify(outcome)).toBe('request');
  });
});

describe(`recorded 500s (${ERRORS_500.length})`, () => {
  it('answers a negative block height with the upstream 500 body itself', () => {
    const c = ERRORS_500.find((x) => x.rec.path === '/extended/v2/blocks/-1');
    expect(c).toBeDefined();
    if (!c) return;
    expect(c.rec.body).toBe('{"statusCode":500,"error":"Internal Server Error","message":"Invalid block height or hash"}');
    expect(outcomeOf(c)).toEqual({ kind: 'error', error: { status: 500, body: c.rec.body } });
  });

  it('passes with_transfers with a non-hex tx id through (an upstream database error, not validation)', () => {
    const c = ERRORS_500.find((x) => x.rec.path.includes('/0xnothex/with_transfers'));
    expect(c).toBeDefined();
    if (!c) return;
    const outcome = outcomeOf(c);
    expect(outcome.kind).toBe('request');
    if (outcome.kind !== 'request') return;
    expect(outcome.request.upstreamPath).toBe('/extended/v1/address/ST000000000000000000002AMW42H/0xnothex/with_transfers');
  });
});
