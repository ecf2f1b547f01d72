/**
 * An answer must be about what was asked (cache/identity.ts, with the identity the route
 * table's resolve() names): every recorded 200 of the 13 routes passes, and another resource's
 * body, a tx/multiple answer with an id missing, added or renamed, fails admission as `invalid`.
 */
import { describe, expect, it } from 'vitest';
import { admit, type Snapshot } from '../../src/cache/admit.js';
import { identityMismatch } from '../../src/cache/identity.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { ROUTES } from '../../src/routes/route-table.js';
import type { RequestFacts } from '../../src/routes/route-spec.js';
import { validateRequest } from '../../src/routes/validate.js';
import { RECORDED, loadRecordings, splitUrl } from '../../testkit/index.js';

const matchPath = createRouteMatcher(ROUTES);
const recordings = loadRecordings();
const body = (path: string): unknown => {
  const found = recordings.find((r) => r.path === path);
  if (!found) throw new Error(`no recording of ${path}`);
  return JSON.parse(found.body) as unknown;
};

/** The facts the proxy's route table derives for a request path. */
function factsOf(pathAndQuery: string): RequestFacts {
  const { path, query } = splitUrl(pathAndQuery);
  const match = matchPath(path);
  if (match.kind !== 'match') throw new Error(`no route for ${path}`);
  const outcome = validateRequest(match.route, match.params, query);
  if (outcome.kind !== 'request') throw new Error(`${pathAndQuery} does not validate`);
  return outcome.request.facts;
}

const TX = RECORDED.confirmedTxId;
const block = (n: number) => body(`/extended/v2/blocks/${n}`) as { hash: string; index_block_hash: string };

describe('every recorded answer is about what it asked', () => {
  const answered = recordings.filter((r) => r.status === 200 && matchPath(splitUrl(r.path).path).kind === 'match');
  it(`passes all ${answered.length} recorded 200s of the 13 routes, and checks the routes that name a resource`, () => {
    let checked = 0;
    for (const rec of answered) {
      const { query, path } = splitUrl(rec.path);
      const match = matchPath(path);
      if (match.kind !== 'match') continue;
      const outcome = validateRequest(match.route, match.params, query);
      if (outcome.kind !== 'request') continue;
      if (outcome.request.facts.identity) checked++;
      expect(identityMismatch(outcome.request.facts.identity, JSON.parse(rec.body)), rec.path).toBeUndefined();
    }
    expect(checked).toBeGreaterThan(50);
  });
});

describe('another resource is refused', () => {
  it.each([
    ['a block by height', '/extended/v2/blocks/5', block(6)],
    ['a block by index hash', `/extended/v2/blocks/${block(5).index_block_hash}`, block(6)],
    ['a block by block hash', `/extended/v2/blocks/${block(5).hash}`, block(6)],
    ['latest, answered with something that is not a block', '/extended/v2/blocks/latest', { limit: 20, results: [] }],
    ['a burn block', `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`, body('/extended/v1/block/by_burn_block_height/136')],
    ['a transaction', `/extended/v1/tx/${TX}`, body(`/extended/v1/tx/${RECORDED.pendingTxId}`)],
    [
      'with_transfers',
      `/extended/v1/address/${RECORDED.principal}/${TX}/with_transfers`,
      { tx: body(`/extended/v1/tx/${RECORDED.pendingTxId}`), stx_sent: '0', stx_received: '0', stx_transfers: [] },
    ],
  ])('%s', (_name, path, wrong) => {
    expect(identityMismatch(factsOf(path).identity, wrong)).toMatch(/.+/);
  });

  it('accepts a block asked by either of its hashes, in any case', () => {
    const five = block(5);
    expect(identityMismatch(factsOf(`/extended/v2/blocks/${five.hash.toUpperCase().replace('0X', '0x')}`).identity, five)).toBeUndefined();
    expect(identityMismatch(factsOf(`/extended/v2/blocks/${five.index_block_hash.slice(2)}`).identity, five)).toBeUndefined();
  });

  describe('tx/multiple', () => {
    const one = body(`/extended/v1/tx/${TX}`);
    const found = (id: string, tx: unknown = one) => ({ [id]: { found: true, result: tx } });
    const missing = (id: string) => ({ [id]: { found: false, result: { tx_id: id } } });
    const listFacts = (...ids: string[]) => factsOf(`/extended/v1/tx/multiple?tx_id=${ids.join(',')}`).identity;
    const UNKNOWN = RECORDED.unknownTxId;

    it('accepts exactly the asked ids, found or not', () => {
      expect(identityMismatch(listFacts(TX, UNKNOWN), { ...found(TX), ...missing(UNKNOWN) })).toBeUndefined();
    });

    it('accepts a found member keyed by the lower-case id and a missing one as requested', () => {
      const upper = `0x${UNKNOWN.slice(2).toUpperCase()}`;
      expect(identityMismatch(listFacts(`0x${TX.slice(2).toUpperCase()}`, upper), { ...found(TX), ...missing(upper) })).toBeUndefined();
    });

    it.each([
      ['an asked id left out', [TX, UNKNOWN], { ...found(TX) }],
      ['an id nobody asked for', [TX], { ...found(TX), ...missing(UNKNOWN) }],
      ['a member whose result is another transaction', [TX], found(TX, body(`/extended/v1/tx/${RECORDED.pendingTxId}`))],
      ['a missing member that names another id', [UNKNOWN], { [UNKNOWN]: { found: false, result: { tx_id: TX } } }],
    ])('refuses %s', (_name, ids, list) => {
      expect(identityMismatch(listFacts(...ids), list)).toMatch(/.+/);
    });
  });
});

describe('admission', () => {
  const ASKED: Snapshot = { chain: { tipHash: '0xtip', tipHeight: 50, burnHeight: 136, finalBurnHeight: 130, reorgs: [] }, at: 1 };
  const response = (status: number, json: unknown) => ({
    upstream: 'http://up',
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: Buffer.from(JSON.stringify(json)),
  });

  it('fails an answer about another block as invalid: retried elsewhere, never stored', () => {
    const result = admit({ freshness: 'block', facts: factsOf('/extended/v2/blocks/5'), response: response(200, block(6)), asked: ASKED });
    expect(result.kind === 'failure' && [result.error.kind, result.error.upstream]).toEqual(['invalid', 'http://up']);
  });

  it('stores the right block, and a 404 (whose error body names nothing)', () => {
    const facts = factsOf('/extended/v2/blocks/5');
    expect(admit({ freshness: 'block', facts, response: response(200, block(5)), asked: ASKED }).kind).toBe('entry');
    expect(admit({ freshness: 'block', facts, response: response(404, { statusCode: 404 }), asked: ASKED }).kind).toBe('entry');
  });
});
