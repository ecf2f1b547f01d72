/**
 * The route matcher and validator are pure and sit in front of everything: no input may make
 * them throw (a throw would be a 500 of the proxy's own making), and what they accept comes out
 * in a canonical form that reads back as itself, so that the request the upstream gets is the
 * request that was validated and the cache key is one per meaning (testkit/fuzz/ builds the inputs).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { validateRequest, type ValidationOutcome } from '../../src/routes/validate.js';
import { pathAndQuery } from '../../testkit/fuzz/arbitraries.js';

const SEED = 20_260_808;
const RUNS = 5_000;
const matchRoute = createRouteMatcher(ROUTES);

function validate(path: string, query: string): ValidationOutcome | undefined {
  const match = matchRoute(path);
  return match.kind === 'match' ? validateRequest(match.route, match.params, query) : undefined;
}

describe('route matcher and validator on hostile paths and queries', () => {
  it(`never throw, and answer with a request, a 4xx/500 in the upstream's shape or a redirect (${RUNS} runs, seed ${SEED})`, () => {
    fc.assert(
      fc.property(pathAndQuery(), ({ path, query }) => {
        const match = matchRoute(path);
        expect(['match', 'bad-url', 'none']).toContain(match.kind);
        if (match.kind !== 'match') return;
        const outcome = validateRequest(match.route, match.params, query);
        if (outcome.kind === 'error') {
          expect([400, 500]).toContain(outcome.error.status);
          expect(JSON.parse(outcome.error.body)).toMatchObject({ statusCode: outcome.error.status });
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it(`give canonical requests that validate to themselves (${RUNS} runs, seed ${SEED})`, () => {
    fc.assert(
      fc.property(pathAndQuery(), ({ path, query }) => {
        const outcome = validate(path, query);
        if (outcome?.kind !== 'request') return;
        const canonical = outcome.request.upstreamPath;
        const mark = canonical.indexOf('?');
        const again = mark < 0 ? validate(canonical, '') : validate(canonical.slice(0, mark), canonical.slice(mark + 1));
        expect(again?.kind === 'request' ? again.request.upstreamPath : again).toBe(canonical);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it(`key what they forward as the request they were given (${RUNS} runs, seed ${SEED})`, () => {
    fc.assert(
      fc.property(pathAndQuery(), ({ path, query }) => {
        const outcome = validate(path, query);
        if (outcome?.kind !== 'request') return;
        const { upstreamPath, canonicalPath } = outcome.request;
        const mark = upstreamPath.indexOf('?');
        const again = mark < 0 ? validate(upstreamPath, '') : validate(upstreamPath.slice(0, mark), upstreamPath.slice(mark + 1));
        expect(again?.kind === 'request' ? again.request.canonicalPath : again).toBe(canonicalPath);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
