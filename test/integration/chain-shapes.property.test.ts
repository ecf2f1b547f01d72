/**
 * The proxy over chains shaped as real ones are (issue 27): generated sequences of chain
 * operations on the fake upstream (blocks in the same tenure, new tenures, burn blocks without
 * Stacks blocks, a burn block announced before its tenure, orphans, reorgs of depth 1 to 3),
 * each followed by reads of the 13 cached routes (and /extended) through the real proxy over
 * real HTTP. Upstream-contract §5: `/extended`'s burn_block_height is the burn chain's tip, often
 * above the tip block's anchor, and a proxy must never take the difference for a contradiction.
 *
 * The oracle, after each operation once the proxy follows the fake's tip (its poll driven with
 * pollOnce, conditional as always, so burn blocks alone stay invisible to it as to a real proxy):
 * - `same-as-upstream`: every answer equals (status and body bytes) the fake's answer for that
 *   path now, or, served from cache (HIT, REVALIDATED, STALE) as `tip` or `mempool`, an answer the
 *   fake gave for that path under the same chain tip (its ETags move with the tip, not with the
 *   burn tip, so the upstream itself confirms those bytes with a 304);
 * - `no-error`: no answer of the honest upstream becomes a 5xx;
 * - `final-stays-true`: bytes once served `final` stay the fake's answer for good, reorgs included;
 * - `breaker-closed`: the upstream's circuit breaker never opens;
 * - `no-disagreement`: no answer of the honest upstream disagrees with the proxy's chain model;
 * - `tip-followed`: the proxy believes the fake's tip after a few polls.
 *
 * Seeded and bounded: CHAIN_SHAPES_SEED and CHAIN_SHAPES_RUNS override the defaults, and
 * CHAIN_SHAPES_SHRINK=1 lets fast-check shrink a failure to its smallest shape (slower).
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import pino from 'pino';
import { describe, it } from 'vitest';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { RECORDED, startFakeUpstream, testConfig, type FakeUpstream } from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';
import { metricValue } from '../support/proxy-harness.js';

const SEED = Number(process.env.CHAIN_SHAPES_SEED ?? 20_270_527);
const RUNS = Number(process.env.CHAIN_SHAPES_RUNS ?? 10);
const SHRINK = process.env.CHAIN_SHAPES_SHRINK === '1';
/** Polls the proxy is given to believe a new tip (a jump past maxJumpBlocks is walked, 32 blocks a poll). */
const POLLS_TO_FOLLOW = 4;
/** The proxy's log message when a breaker opens (src/telemetry/prometheus-telemetry.ts). */
const BREAKER_OPENED = 'upstream circuit breaker opened';

type ChainOp =
  | { kind: 'same-tenure'; blocks: number }
  | { kind: 'new-tenure'; blocks: number }
  | { kind: 'burn-only'; blocks: number }
  | { kind: 'announce' }
  | { kind: 'orphan' }
  | { kind: 'reorg'; depth: number };

const READS = [
  'status',
  'latest',
  'by-height',
  'by-hash',
  'by-burn-height',
  'tx',
  'tx-multiple',
  'tx-events',
  'address-txs',
  'balances',
  'contract-events',
  'with-transfers',
  'mempool',
] as const;
type ReadKind = (typeof READS)[number];

interface Step {
  op: ChainOp;
  reads: ReadKind[];
}

const chainOp: fc.Arbitrary<ChainOp> = fc.oneof(
  fc.record({ kind: fc.constant('same-tenure' as const), blocks: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('new-tenure' as const), blocks: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('burn-only' as const), blocks: fc.integer({ min: 1, max: 30 }) }),
  fc.constant({ kind: 'announce' as const }),
  fc.constant({ kind: 'orphan' as const }),
  fc.record({ kind: fc.constant('reorg' as const), depth: fc.integer({ min: 1, max: 3 }) }),
);
const step: fc.Arbitrary<Step> = fc.record({ op: chainOp, reads: fc.subarray([...READS], { minLength: 3 }) });
const shape = fc.array(step, { minLength: 3, maxLength: 8 });

/** The proxy's default finality depth: what a real chain no longer reorganises. */
const BURN_CONFIRMATIONS = 6;

/**
 * How many of the top `depth` blocks a reorg may replace: on a real chain only blocks anchored
 * fewer than BURN_CONFIRMATIONS burn blocks below the burn tip (the premise `final` rests on; a
 * reorg below it is what final-stays-true would rightly catch, and no honest chain does).
 */
async function reorgableDepth(upstream: FakeUpstream, depth: number): Promise<number> {
  const tip = upstream.tip();
  let allowed = 0;
  for (let height = tip.height; height > tip.height - depth && height > 1; height--) {
    const block = JSON.parse((await fetchRaw(`${upstream.url}/extended/v2/blocks/${height}`)).body.toString()) as { burn_block_height: number };
    if (tip.burn_tip_height - block.burn_block_height >= BURN_CONFIRMATIONS) break;
    allowed++;
  }
  return allowed;
}

async function apply(upstream: FakeUpstream, op: ChainOp): Promise<void> {
  switch (op.kind) {
    case 'same-tenure':
      return upstream.advanceTip(op.blocks, { tenure: 'same' });
    case 'new-tenure':
      return upstream.advanceTip(op.blocks, { tenure: 'new' });
    case 'burn-only':
      return upstream.advanceBurn(op.blocks);
    case 'announce':
      // Nakamoto: the burn block is announced before the tenure's first block, which follows.
      upstream.advanceBurn(1);
      return;
    case 'orphan':
      upstream.mineOrphan();
      return;
    case 'reorg': {
      const depth = await reorgableDepth(upstream, op.depth);
      if (depth > 0) upstream.reorg(depth);
      return;
    }
  }
}

interface Answer {
  status: number;
  body: string;
}
const sameAnswer = (a: Answer, b: Answer) => a.status === b.status && a.body === b.body;
const brief = (a: Answer) => `${a.status} ${a.body.length > 300 ? `${a.body.slice(0, 300)}…` : a.body}`;

interface Violation {
  property: string;
  step: number;
  path: string;
  detail: string;
}

/** Everything one run keeps: the fake, the proxy, what the fake answered (by path, under which tip) and what was served final. */
class Run {
  readonly violations: Violation[] = [];
  readonly contradictions: string[] = [];
  /** path → tip index_block_hash → the fake's answers for it under that tip. */
  private readonly answered = new Map<string, Map<string, Answer[]>>();
  /** path → the answer the proxy served as `final`. */
  private readonly finals = new Map<string, Answer>();
  /** Every index_block_hash seen, canonical or not any more (by-hash reads of orphans: 404 now). */
  private readonly hashesSeen = new Set<string>();
  private readonly burnHeightsSeen = new Set<number>();
  private now = new Map<string, Answer>();

  private constructor(
    readonly upstream: FakeUpstream,
    readonly proxy: ProxyServer,
    private readonly tipTxId: string,
    /** The proxy's log lines not yet looked at. */
    private readonly logLines: string[],
  ) {}

  static async start(): Promise<Run> {
    const upstream = await startFakeUpstream();
    // Only the lines naming a disagreement with the chain model (or, from a proxy before issue 27,
    // a contradiction) and the breaker's opening (it may close again before the metric is read).
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .split('\n')
            .filter((line) => line.includes('contradicts') || line.includes('chain model') || line.includes(BREAKER_OPENED)),
        );
        done();
      },
    });
    // The default breaker threshold and retries: what a deployment runs with.
    const config = testConfig({ upstreamUrls: [upstream.url] });
    const proxy = await startProxy(config, { logger: pino({ level: 'debug' }, sink), defaultMetrics: false });
    const tipBlock = JSON.parse((await fetchRaw(`${upstream.url}/extended/v1/block/by_burn_block_height/${RECORDED.tipBurnHeight}`)).body.toString()) as {
      txs: string[];
    };
    return new Run(upstream, proxy, tipBlock.txs[0] ?? RECORDED.confirmedTxId, lines);
  }

  async close(): Promise<void> {
    await this.proxy.close();
    await this.upstream.close();
  }

  /** The paths a read kind stands for at this moment of the chain. */
  private async pathsOf(kind: ReadKind): Promise<string[]> {
    const tip = this.upstream.tip();
    switch (kind) {
      case 'status':
        return ['/extended'];
      case 'latest':
        return ['/extended/v2/blocks/latest'];
      case 'by-height':
        return [tip.height, tip.height - 1, tip.height - 2, tip.height - 4, 5, tip.height + 1].map((h) => `/extended/v2/blocks/${h}`);
      case 'by-hash':
        return [...this.hashesSeen].slice(-12).map((hash) => `/extended/v2/blocks/${hash}`);
      case 'by-burn-height': {
        const heights = new Set<number>([RECORDED.burnHeightWithBlock, RECORDED.burnHeightWithoutBlock, tip.burn_tip_height + 1]);
        for (let h = tip.burn_block_height - 3; h <= tip.burn_block_height + 2; h++) heights.add(h);
        for (let h = tip.burn_tip_height - 2; h <= tip.burn_tip_height; h++) heights.add(h);
        for (const h of [...this.burnHeightsSeen].slice(-8)) heights.add(h);
        return [...heights].map((h) => `/extended/v1/block/by_burn_block_height/${h}`);
      }
      case 'tx':
        return [RECORDED.confirmedTxId, this.tipTxId, RECORDED.pendingTxId, RECORDED.unknownTxId].map((id) => `/extended/v1/tx/${id}`);
      case 'tx-multiple':
        return [`/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}&tx_id=${this.tipTxId}`];
      case 'tx-events':
        return [`/extended/v1/tx/events?tx_id=${RECORDED.confirmedTxId}`, `/extended/v1/tx/events?tx_id=${this.tipTxId}`];
      case 'address-txs':
        return [`/extended/v1/address/${RECORDED.principal}/transactions`, `/extended/v2/addresses/${RECORDED.principal}/transactions`];
      case 'balances':
        return [`/extended/v1/address/${RECORDED.principal}/stx`, `/extended/v1/address/${RECORDED.principal}/balances`];
      case 'contract-events':
        return [`/extended/v1/contract/${RECORDED.contractId}/events`];
      case 'with-transfers':
        return [
          `/extended/v1/address/${RECORDED.principal}/${RECORDED.pendingTxId}/with_transfers`,
          `/extended/v1/address/${RECORDED.principal}/${this.tipTxId}/with_transfers`,
        ];
      case 'mempool':
        return ['/extended/v2/mempool/fees', '/extended/v1/tx/mempool/stats'];
    }
  }

  /** What the fake answers now for every path any read may ask (and every path once served final). */
  private async observeUpstream(): Promise<void> {
    const tip = this.upstream.tip();
    for (let h = Math.max(1, tip.height - 4); h <= tip.height; h++) {
      const block = JSON.parse((await fetchRaw(`${this.upstream.url}/extended/v2/blocks/${h}`)).body.toString()) as { index_block_hash?: string };
      if (block.index_block_hash) this.hashesSeen.add(block.index_block_hash);
    }
    this.burnHeightsSeen.add(tip.burn_block_height);
    this.burnHeightsSeen.add(tip.burn_tip_height);
    const paths = new Set<string>(this.finals.keys());
    for (const kind of READS) for (const path of await this.pathsOf(kind)) paths.add(path);
    this.now = new Map();
    for (const path of paths) {
      const raw = await fetchRaw(this.upstream.url + path);
      const answer = { status: raw.status, body: raw.body.toString() };
      this.now.set(path, answer);
      const byTip = this.answered.get(path) ?? new Map<string, Answer[]>();
      const underTip = byTip.get(tip.index_block_hash) ?? [];
      if (!underTip.some((a) => sameAnswer(a, answer))) underTip.push(answer);
      byTip.set(tip.index_block_hash, underTip);
      this.answered.set(path, byTip);
    }
  }

  private violate(property: string, step: number, path: string, detail: string): void {
    this.violations.push({ property, step, path, detail });
  }

  /** Lets the proxy see the fake's tip through its own (conditional) poll. */
  private async follow(step: number): Promise<void> {
    const want = this.upstream.tip().index_block_hash;
    for (let i = 0; i < POLLS_TO_FOLLOW; i++) {
      await this.proxy.tracker.pollOnce();
      if (this.proxy.tracker.tip?.indexBlockHash === want) return;
    }
    const believed = this.proxy.tracker.tip;
    this.violate(
      'tip-followed',
      step,
      '/extended',
      `the proxy believes ${believed?.height} ${believed?.indexBlockHash}, the fake's tip is ${this.upstream.tip().height} ${want}`,
    );
  }

  async check(step: number, reads: readonly ReadKind[]): Promise<void> {
    await this.observeUpstream();
    await this.follow(step);
    const tipHash = this.upstream.tip().index_block_hash;
    for (const [path, final] of this.finals) {
      const upstreamNow = this.now.get(path);
      if (upstreamNow && !sameAnswer(final, upstreamNow)) {
        this.violate('final-stays-true', step, path, `served final: ${brief(final)}\nthe upstream now: ${brief(upstreamNow)}`);
        this.finals.delete(path);
      }
    }
    for (const kind of reads) {
      for (const path of await this.pathsOf(kind)) await this.read(step, path, tipHash);
    }
    const logged = this.logLines.splice(0);
    const opened = logged.some((line) => line.includes(BREAKER_OPENED));
    if (opened || (await metricValue(this.proxy, 'stacks_proxy_upstream_breaker_open')) !== 0) {
      this.violate('breaker-closed', step, '-', 'the circuit breaker of the only (honest) upstream opened');
    }
    this.contradictions.push(...logged.filter((line) => line.includes('contradicts') || line.includes('chain model')));
    // An honest upstream's answer that does not fit the proxy's model means the model is wrong
    // (and the answer uncacheable): none may.
    const disagreements = await metricValue(this.proxy, 'stacks_proxy_chain_disagreements_total');
    if (disagreements > 0) this.violate('no-disagreement', step, '-', `${disagreements} answers of the honest upstream disagreed with the chain model`);
  }

  private async read(step: number, path: string, tipHash: string): Promise<void> {
    const raw = await fetchRaw(this.proxy.url + path);
    const served = { status: raw.status, body: raw.body.toString() };
    const upstream = this.now.get(path) ?? { status: 0, body: '(not observed)' };
    const cache = raw.headers.get('x-cache');
    const cls = raw.headers.get('x-cache-class');
    const how = `X-Cache ${cache}, X-Cache-Class ${cls}`;
    if (served.status >= 500 && upstream.status < 500) {
      this.violate('no-error', step, path, `the proxy answered ${brief(served)} (${how}); the upstream answers ${brief(upstream)}`);
      return;
    }
    if (cls === 'final') {
      const earlier = this.finals.get(path);
      if (earlier && !sameAnswer(earlier, served))
        this.violate('final-stays-true', step, path, `final twice, differently: ${brief(earlier)}\nthen ${brief(served)}`);
      this.finals.set(path, served);
    }
    if (sameAnswer(served, upstream)) return;
    const fromCache = cache === 'HIT' || cache === 'REVALIDATED' || cache === 'STALE';
    const underThisTip = this.answered.get(path)?.get(tipHash) ?? [];
    if (fromCache && (cls === 'tip' || cls === 'mempool') && underThisTip.some((a) => sameAnswer(a, served))) return;
    this.violate('same-as-upstream', step, path, `the proxy served ${brief(served)} (${how})\nthe upstream answers ${brief(upstream)}`);
  }
}

function describeShape(steps: readonly Step[]): string {
  return steps.map((s, i) => `  ${i + 1}. ${JSON.stringify(s.op)} then read ${s.reads.join(', ')}`).join('\n');
}

function report(steps: readonly Step[], run: Run): string {
  const first = run.violations.slice(0, 6).map((v) => `- [${v.property}] after step ${v.step}, ${v.path}:\n    ${v.detail.replace(/\n/g, '\n    ')}`);
  const properties = [...new Set(run.violations.map((v) => v.property))].join(', ');
  const log = run.contradictions.slice(0, 3).map((line) => `    ${line.slice(0, 400)}`);
  return [
    `${run.violations.length} violation(s) (${properties}); rerun with CHAIN_SHAPES_SEED=${SEED} (CHAIN_SHAPES_SHRINK=1 to shrink)`,
    'chain shape (step 0: the recorded chain, before any operation):',
    describeShape(steps),
    ...first,
    ...(log.length > 0 ? ['the proxy logged:', ...log] : []),
  ].join('\n');
}

describe('the proxy over generated chain shapes', () => {
  it(`answers as the honest upstream does, never errs, keeps final true and its breaker closed (${RUNS} runs, seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(shape, async (steps) => {
        const run = await Run.start();
        try {
          await run.check(0, READS);
          for (const [i, { op, reads }] of steps.entries()) {
            await apply(run.upstream, op);
            await run.check(i + 1, reads);
          }
          if (run.violations.length > 0) throw new Error(report(steps, run));
        } finally {
          await run.close();
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: !SHRINK },
    );
  }, 180_000);
});
