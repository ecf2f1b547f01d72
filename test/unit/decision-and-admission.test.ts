/**
 * The decision record (policy.decide) for every state a stored entry can be in, and the pure
 * admission step (admit.ts): entry, pass-on or failure, the body parsed once; tx/multiple
 * answers split into per-transaction entries whose bytes are the /tx/{id} answers'.
 */
import { describe, expect, it } from 'vitest';
import { admit, admitList, bodyEtag, confirm, type Snapshot } from '../../src/cache/admit.js';
import type { CacheEntry, FreshnessClass } from '../../src/cache/entry.js';
import { decide, fallbackOf, type ChainView, type Decision, type TtlSettings } from '../../src/cache/policy.js';
import { memberText, servesListMember, servesTransaction } from '../../src/cache/tx-member.js';
import type { UpstreamResponse } from '../../src/upstream/client.js';
import { UpstreamError } from '../../src/upstream/errors.js';
import { RECORDED, loadRecordings } from '../../testkit/index.js';
import { recordedChainView } from '../support/recorded-chain-view.js';

const T0 = 1_700_000_000_000;
const CHAIN: ChainView = { tipHash: '0xtip', tipHeight: 50, burnHeight: 136, finalBurnHeight: 130, finalStacksHeight: 40, reorgs: [] };
const NEW_TIP: ChainView = { ...CHAIN, tipHash: '0xnext', tipHeight: 51 };
const TTL: TtlSettings = { tipSafetyMs: 60_000, mempoolMs: 2_000, staleWhileRevalidateMs: 3_000, retainExpiredMs: 300_000 };

function entry(cls: FreshnessClass, extra: Partial<CacheEntry> = {}): CacheEntry {
  return { status: 200, body: Buffer.from('{}'), headers: {}, etag: '"e"', cls, validatedAt: T0, ...(cls === 'final' ? {} : { tipHash: '0xtip' }), ...extra };
}

describe('decide', () => {
  const withEtag = (cls: FreshnessClass) => entry(cls, { upstreamEtag: '"up"' });

  it('refetches without fallback when nothing is held', () => {
    expect(decide(undefined, T0, CHAIN, TTL)).toEqual({ action: 'refetch' });
  });

  it.each<[string, CacheEntry, number, ChainView]>([
    ['a final entry, forever', entry('final', { height: 12 }), T0 + 10 * 365 * 86_400_000, NEW_TIP],
    ['a tip entry under its tip within the safety TTL', entry('tip'), T0 + TTL.tipSafetyMs - 1, CHAIN],
    ['a mempool entry within the mempool TTL', entry('mempool'), T0 + TTL.mempoolMs - 1, CHAIN],
  ])('serves %s fresh', (_name, held, now, chain) => {
    expect(decide(held, now, chain, TTL)).toEqual({ action: 'fresh', entry: held });
  });

  it('revalidates an expired entry that has the upstream ETag, which also stands in on failure', () => {
    const held = withEtag('tip');
    const decision = decide(held, T0 + TTL.tipSafetyMs, CHAIN, TTL);
    expect(decision).toEqual({ action: 'revalidate', etag: '"up"', entry: held });
    expect(decision.action === 'revalidate' && fallbackOf(decision)).toBe(held);
  });

  it('revalidates a tip entry after a new block, at once', () => {
    const held = withEtag('tip');
    expect(decide(held, T0 + 1, NEW_TIP, TTL)).toEqual({ action: 'revalidate', etag: '"up"', entry: held });
  });

  it('refetches an expired entry without an upstream ETag, keeping it as the fallback', () => {
    const held = entry('tip');
    const decision = decide(held, T0 + TTL.tipSafetyMs, CHAIN, TTL);
    expect(decision).toEqual({ action: 'refetch', fallback: held });
    expect(decision.action === 'refetch' && fallbackOf(decision)).toBe(held);
  });

  it('serves a just-expired mempool entry while it refreshes, by revalidation when it can', () => {
    const held = withEtag('mempool');
    expect(decide(held, T0 + TTL.mempoolMs, CHAIN, TTL)).toEqual({
      action: 'serve-stale-and-refresh',
      entry: held,
      refresh: { action: 'revalidate', etag: '"up"', entry: held },
    });
    const bare = entry('mempool');
    expect(decide(bare, T0 + TTL.mempoolMs + TTL.staleWhileRevalidateMs - 1, CHAIN, TTL)).toEqual({
      action: 'serve-stale-and-refresh',
      entry: bare,
      refresh: { action: 'refetch', fallback: bare },
    });
  });

  it('stops serving a mempool entry stale once the window passes or a block arrives', () => {
    const held = withEtag('mempool');
    expect(decide(held, T0 + TTL.mempoolMs + TTL.staleWhileRevalidateMs, CHAIN, TTL).action).toBe('revalidate');
    expect(decide(held, T0 + 1, NEW_TIP, TTL).action).toBe('revalidate');
  });

  it('never serves stale or revalidates what a reorg made suspect: refetch, purged, no fallback', () => {
    const afterReorg: ChainView = { ...CHAIN, reorgs: [{ at: T0 + 10, forkHeight: 30 }] };
    const purged: Decision = { action: 'refetch', purged: true };
    expect(decide(withEtag('tip'), T0 + 20, afterReorg, TTL)).toEqual(purged);
    expect(decide(withEtag('mempool'), T0 + 20, afterReorg, TTL)).toEqual(purged);
    expect(decide(entry('final', { height: 31 }), T0 + 20, afterReorg, TTL)).toEqual(purged);
    expect(fallbackOf(purged as Decision & { action: 'refetch' })).toBeUndefined();
    expect(decide(entry('final', { height: 30 }), T0 + 20, afterReorg, TTL).action).toBe('fresh');
  });
});

const ASKED: Snapshot = { chain: recordedChainView(), at: T0 };
const JSON_TYPE = 'application/json; charset=utf-8';

function answer(status: number, body: string, headers: Record<string, string> = { 'content-type': JSON_TYPE }): UpstreamResponse {
  return { upstream: 'http://up', status, headers, body: Buffer.from(body, 'utf8') };
}

const recordings = loadRecordings();
const recorded = (path: string) => {
  const found = recordings.find((r) => r.path === path);
  if (!found) throw new Error(`no recording of ${path}`);
  return found;
};

describe('admit', () => {
  const txPath = `/extended/v1/tx/${RECORDED.confirmedTxId}`;

  it('makes a transaction an entry with its class, its place in lists and the upstream ETag', () => {
    const rec = recorded(txPath);
    const result = admit({
      freshness: 'transaction',
      facts: {},
      response: answer(200, rec.body, { 'content-type': JSON_TYPE, etag: '"tx-etag"', 'x-api-version': 'v8' }),
      asked: ASKED,
    });
    expect(result.kind).toBe('entry');
    if (result.kind !== 'entry') return;
    expect(result.entry).toEqual({
      status: 200,
      body: Buffer.from(rec.body),
      headers: { 'content-type': JSON_TYPE, 'x-api-version': 'v8' },
      upstreamEtag: '"tx-etag"',
      etag: '"tx-etag"',
      cls: 'final',
      height: RECORDED.confirmedTxHeight,
      validatedAt: T0,
      tipHash: undefined,
      tipHeight: undefined,
      listItem: { found: true, minedHeight: RECORDED.confirmedTxHeight, unwrapped: true },
    });
  });

  it('hashes the body for the ETag when the upstream sent none or a weak one', () => {
    const result = admit({ freshness: 'mempool', facts: {}, response: answer(200, '{"a":1}', { 'content-type': JSON_TYPE, etag: 'W/"weak"' }), asked: ASKED });
    expect(result.kind === 'entry' && result.entry).toMatchObject({
      etag: bodyEtag(Buffer.from('{"a":1}')),
      upstreamEtag: undefined,
      cls: 'mempool',
      tipHash: ASKED.chain.tipHash,
      tipHeight: 50,
    });
  });

  it.each([
    ['not JSON', answer(200, '<html>', { 'content-type': 'text/html' })],
    ['a JSON type with a body that does not parse', answer(200, '{"tx_status":"succ')],
    ['a 404 that is not JSON', answer(404, 'Not Found', { 'content-type': 'text/plain' })],
  ])('fails (retried elsewhere) on %s', (_name, response) => {
    const result = admit({ freshness: 'transaction', facts: {}, response, asked: ASKED });
    expect(result.kind).toBe('failure');
    expect(result.kind === 'failure' && result.error).toBeInstanceOf(UpstreamError);
    expect(result.kind === 'failure' && result.error.kind).toBe('invalid');
  });

  it.each([500, 503, 400, 304, 302])('passes a %i on with its own cache headers, unread', (status) => {
    const response = answer(status, 'whatever', { 'content-type': 'text/plain', 'cache-control': 'no-store', etag: '"x"', location: '/y', server: 'up' });
    expect(admit({ freshness: 'transaction', facts: {}, response, asked: ASKED })).toEqual({
      kind: 'pass-on',
      passed: { status, body: Buffer.from('whatever'), headers: { 'content-type': 'text/plain', 'cache-control': 'no-store', etag: '"x"', location: '/y' } },
    });
  });

  it('passes on a well-formed 200 the rules do not class (with_transfers without its tx)', () => {
    expect(admit({ freshness: 'tx_with_transfers', facts: {}, response: answer(200, '{"stx_sent":"0"}'), asked: ASKED }).kind).toBe('pass-on');
  });

  it('classes a whole tx/multiple answer by its least fresh member', () => {
    const rec = recorded(`/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}`);
    const alone = admit({ freshness: 'transaction_list', facts: {}, response: answer(200, rec.body), asked: ASKED });
    expect(alone.kind === 'entry' && [alone.entry.cls, alone.entry.height, alone.entry.listItem]).toEqual(['final', RECORDED.confirmedTxHeight, undefined]);
    const withPending = recordings.find((r) => r.path.startsWith('/extended/v1/tx/multiple?') && r.status === 200 && r.body.includes(RECORDED.pendingTxId));
    const mixed = admit({ freshness: 'transaction_list', facts: {}, response: answer(200, withPending?.body ?? ''), asked: ASKED });
    expect(mixed.kind === 'entry' && mixed.entry.cls).toBe('mempool');
  });

  it('re-decides the class of bytes a 304 confirmed, at the new time and tip', () => {
    const rec = recorded(txPath);
    const held = entry('tip', { body: Buffer.from(rec.body), upstreamEtag: '"up"', validatedAt: T0 - 5_000 });
    const later: Snapshot = { chain: { ...ASKED.chain, tipHash: '0xlater' }, at: T0 + 1 };
    expect(confirm(held, { freshness: 'transaction', facts: {}, asked: later })).toEqual({
      kind: 'entry',
      entry: { ...held, cls: 'final', height: RECORDED.confirmedTxHeight, validatedAt: T0 + 1, tipHash: undefined, tipHeight: undefined },
    });
  });

  it('asks for a check when the block of an otherwise final answer is not known yet, and passes on unstored one that disagrees with the chain', () => {
    const rec = recorded(txPath);
    const { canonical: _omit, ...unverified } = ASKED.chain;
    const result = admit({ freshness: 'transaction', facts: {}, response: answer(200, rec.body), asked: { ...ASKED, chain: unverified } });
    expect(result.kind === 'entry' && [result.entry.cls, result.unverified?.height]).toEqual(['tip', RECORDED.confirmedTxHeight]);
    const lying = answer(200, JSON.stringify({ ...JSON.parse(rec.body), burn_block_height: 1 }));
    const disagreeing = admit({ freshness: 'transaction', facts: {}, response: lying, asked: ASKED });
    // The client gets the upstream's bytes; nothing is stored, and the upstream is not failed.
    expect(disagreeing.kind).toBe('pass-on');
    expect(disagreeing.kind === 'pass-on' && [disagreeing.passed.body.equals(lying.body), disagreeing.disagreement?.reason]).toEqual([true, 'anchor_differs']);
    const held = entry('tip', { body: lying.body });
    expect(confirm(held, { freshness: 'transaction', facts: {}, asked: ASKED }).kind).toBe('failure');
  });
});

describe('admitList', () => {
  const lists = recordings.filter((r) => r.path.startsWith('/extended/v1/tx/multiple?') && r.status === 200);
  const txBody = (id: string) => recorded(`/extended/v1/tx/${id}`).body;
  /** The ids a recorded request asked for, repeated or comma-listed. */
  const askedIn = (path: string) => new URLSearchParams(path.split('?')[1]).getAll('tx_id').flatMap((v) => v.split(','));

  it(`stores every found member of the ${lists.length} recorded lists as the exact /tx/{id} bytes, and rebuilds the member`, () => {
    let found = 0;
    let missing = 0;
    for (const rec of lists) {
      const result = admitList({ response: answer(200, rec.body), asked: ASKED, askedIds: askedIn(rec.path), transactionHeaders: { warning: 'w' } });
      expect(result.kind, rec.path).toBe('members');
      if (result.kind !== 'members') continue;
      const original = JSON.parse(rec.body) as Record<string, { found: boolean }>;
      expect([...result.members.keys()]).toEqual(Object.keys(original));
      for (const [id, member] of result.members) {
        expect(rec.body.includes(`${JSON.stringify(id)}:${memberText(member)}`), `${rec.path} ${id}`).toBe(true);
        if (original[id]?.found) {
          found++;
          expect(member.body.toString('utf8')).toBe(txBody(id));
          expect(servesTransaction(member) && servesListMember(member)).toBe(true);
          expect(member.headers).toEqual({ 'content-type': JSON_TYPE, warning: 'w' });
          expect(member.etag).toBe(bodyEtag(member.body));
        } else {
          missing++;
          expect(member.listItem).toEqual({ found: false, minedHeight: undefined });
          expect([servesTransaction(member), servesListMember(member), member.cls]).toEqual([false, true, 'mempool']);
        }
      }
    }
    expect(found).toBeGreaterThan(5);
    expect(missing).toBeGreaterThan(0);
  });

  it('keeps a found member in an unexpected form as the list sent it, for lists only', () => {
    const tx = txBody(RECORDED.confirmedTxId);
    const body = `{"${RECORDED.confirmedTxId}":{"result":${tx},"found":true}}`;
    const result = admitList({ response: answer(200, body), asked: ASKED, askedIds: [RECORDED.confirmedTxId], transactionHeaders: {} });
    const member = result.kind === 'members' ? result.members.get(RECORDED.confirmedTxId) : undefined;
    expect(member && [memberText(member), servesTransaction(member), member.cls]).toEqual([`{"result":${tx},"found":true}`, false, 'final']);
  });

  it.each([
    ['an array', '[1]'],
    ['a member that is not an object', '{"0x01":1}'],
    ['a body that does not parse', '{"0x01":{"found":tr'],
  ])('fails on %s', (_name, body) => {
    expect(admitList({ response: answer(200, body), asked: ASKED, askedIds: ['0x01'], transactionHeaders: {} }).kind).toBe('failure');
  });

  it('passes on anything but a 200', () => {
    expect(admitList({ response: answer(400, '{"statusCode":400}'), asked: ASKED, askedIds: ['0x01'], transactionHeaders: {} }).kind).toBe('pass-on');
  });
});
