/**
 * The block learner's reading of the upstream (src/chain/block-learner.ts), against a source that
 * answers like the upstream's routes: what it counts as touched, and every answer it must refuse
 * to learn from (the block's touches are then unknown, and the registry voids its learning).
 */
import { describe, expect, it } from 'vitest';
import { PrincipalActivity, type TipRef } from '../../src/chain/activity.js';
import { BlockLearner, type LearnSource, type SharedLearning } from '../../src/chain/block-learner.js';
import type { BlockTouches } from '../../src/chain/activity.js';
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import type { UpstreamRequest, UpstreamResponse } from '../../src/upstream/client.js';

const ALICE = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const BOB = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const CAROL = 'SP1P72Z3704VMT3DMHPP2CB8TGQWGDBHD3RPR9GZS';
const hash = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;
const block = (height: number): TipRef => ({ height, indexBlockHash: hash(height), burnHeight: 700 });

type Tx = Record<string, unknown>;
const tx = (id: number, fields: Tx = {}): Tx => ({
  tx_id: hash(1000 + id),
  canonical: true,
  block_height: 11,
  event_count: 0,
  sender_address: ALICE,
  ...fields,
});

/** `value` inside `levels` nested objects. */
const nested = (levels: number, value: unknown): unknown => (levels === 0 ? value : { inner: nested(levels - 1, value) });

/** Answers the learner's two routes from a block's transactions and their events; records the paths asked. */
function sourceFor(txs: Tx[], events: Record<string, unknown[]> = {}, status = 200): LearnSource & { paths: string[] } {
  const paths: string[] = [];
  const answer = (body: unknown): UpstreamResponse =>
    ({ status, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(body)), upstream: 'u' }) as UpstreamResponse;
  return {
    paths,
    getFrom: async (_origin: string, request: UpstreamRequest) => {
      paths.push(request.path);
      const url = new URL(request.path, 'http://upstream');
      if (url.pathname.endsWith('/transactions')) {
        const offset = Number(url.searchParams.get('offset'));
        const limit = Number(url.searchParams.get('limit'));
        return answer({ limit, offset, total: txs.length, results: txs.slice(offset, offset + limit) });
      }
      const members: Record<string, unknown> = {};
      for (const id of url.searchParams.getAll('tx_id')) members[id] = { found: true, result: { tx_id: id, events: events[id] ?? [] } };
      return answer(members);
    },
  };
}

/** Learns block 11 on top of 10 and tells whether ALICE, BOB and CAROL are unchanged since 10 (false for all: unknown). */
async function learn(
  source: LearnSource,
  settings = { maxTxPages: 10, maxEventRequests: 25 },
  shared?: SharedLearning,
  onTransactions?: (tip: TipRef, ids: unknown[]) => void,
) {
  const activity = new PrincipalActivity({ maxPrincipals: 100, settleMs: 0, coinbaseWindowBlocks: 5, watchMs: 7_000 });
  const outcomes: string[] = [];
  const reasons: (string | undefined)[] = [];
  const telemetry = Object.assign(Object.create(noopTelemetry) as Telemetry, {
    blockLearned: (outcome: string, why?: string) => {
      outcomes.push(outcome);
      reasons.push(why);
    },
  });
  const learner = new BlockLearner({ source, activity, settings, clock: () => 1_000, telemetry, shared, onTransactions });
  learner.onTip(block(10), 'u', false);
  learner.onTip(block(11), 'u', false);
  for (let i = 0; i < 50 && outcomes.length < 2; i++) await new Promise((resolve) => setImmediate(resolve));
  return {
    outcome: outcomes[1],
    why: reasons[1],
    unchanged: [ALICE, BOB, CAROL].map((p) => activity.unchangedSince(p, 10, 1_000)),
    tokensUnchanged: [ALICE, BOB, CAROL].map((p) => activity.unchangedSince(p, 10, 1_000, 'token_events')),
  };
}

describe('BlockLearner', () => {
  it('counts the senders, recipients and event principals of the block as touched, and nobody else', async () => {
    const source = sourceFor([tx(1, { token_transfer: { recipient_address: BOB } }), tx(2, { event_count: 1 })], {
      [hash(1002)]: [{ asset: { recipient: CAROL } }],
    });
    expect(await learn(source)).toMatchObject({ outcome: 'learned', unchanged: [false, false, false] });
    const quiet = sourceFor([tx(1, { sender_address: BOB })]);
    expect(await learn(quiet)).toMatchObject({ outcome: 'learned', unchanged: [true, false, true] });
    expect(quiet.paths).toEqual([`/extended/v2/blocks/${hash(11)}/transactions?limit=50&offset=0`]);
  });

  it('tells token touches apart: every event but an STX transfer or lock names principals whose token balances moved', async () => {
    const source = sourceFor([tx(1, { token_transfer: { recipient_address: BOB }, event_count: 1 }), tx(2, { event_count: 2 })], {
      [hash(1001)]: [{ event_type: 'stx_asset', asset: { asset_event_type: 'transfer', sender: ALICE, recipient: BOB } }],
      [hash(1002)]: [
        { event_type: 'stx_lock', stx_lock_event: { locked_address: ALICE } },
        { event_type: 'fungible_token_asset', asset: { asset_event_type: 'transfer', sender: ALICE, recipient: CAROL } },
      ],
    });
    expect(await learn(source)).toMatchObject({ outcome: 'learned', unchanged: [false, false, false], tokensUnchanged: [false, true, false] });
    // An event of a type not known names its principals for tokens too (conservative).
    const unknownType = sourceFor([tx(1, { sender_address: CAROL, event_count: 1 })], { [hash(1001)]: [{ event_type: 'something_new', who: BOB }] });
    expect(await learn(unknownType)).toMatchObject({ outcome: 'learned', tokensUnchanged: [true, false, true] });
  });

  it.each([
    ['an upstream error', sourceFor([tx(1)], {}, 500), /answered 500/],
    ['no transactions at all (a block no longer canonical)', sourceFor([]), /no transactions/],
    ['a transaction not canonical', sourceFor([tx(1, { canonical: false })]), /not in block 11/],
    ['a transaction of another block', sourceFor([tx(1, { block_height: 12 })]), /not in block 11/],
    ['fewer events than the transaction counts', sourceFor([tx(1, { event_count: 2 })], { [hash(1001)]: [{}] }), /not read in full/],
    ['more pages than allowed', sourceFor(Array.from({ length: 51 }, (_, i) => tx(i, { sender_address: BOB }))), /more than 1 pages/],
    // Unknown is not "none": without event_count the events (where balances move) were never asked for.
    ['a transaction without its event_count', sourceFor([tx(1, { sender_address: BOB, event_count: undefined })]), /without its event_count/],
    ['a transaction whose event_count is not a count', sourceFor([tx(1, { sender_address: BOB, event_count: '1' })]), /without its event_count/],
    ['a transaction nested deeper than the scan reads', sourceFor([tx(1, { sender_address: BOB, deep: nested(40, CAROL) })]), /nests deeper/],
    [
      'events nested deeper than the scan reads',
      sourceFor([tx(1, { sender_address: BOB, event_count: 1 })], { [hash(1001)]: [nested(40, CAROL)] }),
      /nest deeper/,
    ],
  ])('learns nothing from %s: the block is unknown', async (_what, source, why) => {
    const settings = { maxTxPages: 1, maxEventRequests: 25 };
    const learned = await learn(source, settings);
    expect(learned).toMatchObject({ outcome: 'unknown', unchanged: [false, false, false] });
    expect(learned.why).toMatch(why);
  });

  it('asks for events 20 transactions at a time, and no more requests than allowed', async () => {
    const txs = Array.from({ length: 41 }, (_, i) => tx(i, { sender_address: BOB, event_count: 1 }));
    const events = Object.fromEntries(txs.map((t) => [t.tx_id as string, [{ asset: { recipient: BOB } }]]));
    const source = sourceFor(txs, events);
    expect((await learn(source)).outcome).toBe('learned');
    expect(source.paths.filter((p) => p.startsWith('/extended/v1/tx/multiple'))).toHaveLength(3);
    expect(await learn(sourceFor(txs, events), { maxTxPages: 10, maxEventRequests: 2 })).toMatchObject({
      outcome: 'unknown',
      why: expect.stringMatching(/more than 2 requests/),
    });
  });
});

describe('BlockLearner in worker mode: one learner per host', () => {
  const txs = [tx(1, { token_transfer: { recipient_address: BOB } })];
  /** A share as a worker's: leading or not, the leader's word it has for a block (or none), and what it was told. */
  function share(leading: boolean, word?: { touches: BlockTouches; txIds: string[] }) {
    const told: Array<{ tip: TipRef; touches: BlockTouches; txIds: string[] | undefined }> = [];
    const asked: TipRef[] = [];
    const shared: SharedLearning = {
      learnsItself: () => leading,
      learned: (tip, touches, txIds) =>
        told.push({ tip, touches: touches.kind === 'known' ? { ...touches, principals: [...touches.principals] } : touches, txIds }),
      leaderLearned: async (tip) => {
        asked.push(tip);
        return word;
      },
    };
    return { shared, told, asked };
  }

  it('the leader learns from the upstream and tells the followers what it found, with the transaction ids', async () => {
    const source = sourceFor(txs);
    const { shared, told } = share(true);
    expect(await learn(source, undefined, shared)).toMatchObject({ outcome: 'learned', unchanged: [false, false, true] });
    expect(told.map((t) => t.tip.height)).toEqual([11]);
    expect(told[0]?.touches).toMatchObject({ kind: 'known', principals: expect.arrayContaining([ALICE, BOB]) });
    expect(told[0]?.txIds).toEqual([hash(1001)]);
    expect(source.paths.length).toBeGreaterThan(0);
  });

  it("a follower takes the leader's word without asking the upstream, and hands the ids to the warm-up", async () => {
    const source = sourceFor(txs);
    const { shared, asked, told } = share(false, { touches: { kind: 'known', principals: [CAROL], coinbaseRecipients: [] }, txIds: [hash(7)] });
    const warmed: unknown[][] = [];
    expect(await learn(source, undefined, shared, (_tip, ids) => warmed.push(ids))).toMatchObject({ outcome: 'learned', unchanged: [true, true, false] });
    expect(source.paths).toEqual([]);
    expect(asked.map((t) => t.indexBlockHash)).toEqual([hash(11)]);
    expect(told).toEqual([]);
    expect(warmed).toEqual([[hash(7)]]);
  });

  it("the leader's unknown is the follower's unknown; without a word in time the follower learns the block itself", async () => {
    const unknown = share(false, { touches: { kind: 'unknown', why: 'a page short of the total' }, txIds: [] });
    expect(await learn(sourceFor(txs), undefined, unknown.shared)).toMatchObject({ outcome: 'unknown', why: 'a page short of the total' });
    const source = sourceFor(txs);
    const silent = share(false);
    expect(await learn(source, undefined, silent.shared)).toMatchObject({ outcome: 'learned', unchanged: [false, false, true] });
    expect(source.paths.length).toBeGreaterThan(0);
    expect(silent.told).toEqual([]); // a follower's own learning is not sent: only the leader speaks for the host
  });
});
