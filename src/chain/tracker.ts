/**
 * Tracks the chain tip by polling each upstream's `GET /extended` with If-None-Match (a 304
 * until a block arrives), each upstream on its own schedule: a hanging upstream delays only its
 * own next poll, never the tip seen from another. Each answer is judged as it arrives, one at a
 * time: which tip to believe (tip-evidence.ts: a far jump needs another upstream, or its parent
 * chain, jump-walk.ts), whether it is a reorg or a correction (a tip that does not extend the
 * believed one, fork-search.ts), and which data is final (finality.ts: a verified watermark,
 * never the tip alone). The canonical blocks it verifies on the way are recorded
 * (canonical-record.ts), and it checks others on demand (`verifyCanonical`), so that an answer is
 * final only when the block it names is the canonical one. Each upstream's believable tip goes
 * to the upstream health owner, which decides from it which upstreams lag.
 *
 * Two burn heights, never confused (upstream-contract.md §5): the status's
 * `chain_tip.burn_block_height` is the burn chain's tip, moved by every burn block whether or not
 * a Stacks block came with it; the tip block's own anchor is read from the block itself
 * (`/extended/v2/blocks/{index_block_hash}`) once the tip is believed, and is often lower. A 304
 * to a conditional poll says nothing of the burn tip (the status ETag follows the Stacks tip
 * only), so each upstream is polled unconditionally every BURN_TIP_REFRESH_MS.
 */
import { performance } from 'node:perf_hooks';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { Clock } from '../clock.js';
import type { UpstreamRequest, UpstreamResponse } from '../upstream/client.js';
import { parseBoundedJson } from '../upstream/bounded-json.js';
import { judgeAnswer } from '../upstream/answer-verdict.js';
import { UpstreamError } from '../upstream/errors.js';
import { canonicalBlockOf, CanonicalRecord } from './canonical-record.js';
import { FinalityWatermark, type BurnBlockAnswer } from './finality.js';
import { extendsTip, findForkHeight, TipHistory } from './fork-search.js';
import { ParentWalks, type WalkResult } from './jump-walk.js';
import { ReorgLog } from './reorg-log.js';
import { TipEvidence } from './tip-evidence.js';
import type { ActivityView } from './activity-view.js';
import type { BlockRef, CanonicalBlock, ChainTip, ChainView } from './view.js';

export type { ChainTip } from './view.js';

export type TipListener = (tip: ChainTip, origin: string, reorg: boolean) => void;
/** One upstream's tip as its poll answered it, whatever the judgement (believed, kept, held). */
export type PollListener = (origin: string, tip: ChainTip) => void;

export interface ChainTipSettings {
  pollIntervalMs: number;
  /** Longest a poll of one upstream is waited for (by pollOnce and shutdown); its request may run on. */
  pollTimeoutMs: number;
  /** A tip or burn height further ahead of the believed tip than this waits for confirmation. */
  maxJumpBlocks: number;
  burnConfirmations: number;
  /** How many blocks back a reorg's fork point is searched for before assuming the worst. */
  reorgMaxWalk: number;
}

/** What the tracker needs of the upstreams: who they are, which are usable now, and one request to a named one. */
export interface TipSource {
  readonly origins: string[];
  getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse>;
  status(): { origin: string; usable: boolean }[];
}

/** Where each upstream's tip height goes (the upstream health owner). */
export interface TipReceiver {
  reportTip(origin: string, height: number): void;
  /** An upstream whose tip poll got no answer within pollTimeoutMs (its request may run on): said as its last error until it fails or answers otherwise. */
  reportNoAnswer?(origin: string, waitedMs: number): void;
}

interface StatusBody {
  chain_tip?: { block_height?: number; index_block_hash?: string; burn_block_height?: number; block_hash?: string };
}

/** Blocks of a jumped tip's parent chain asked for per poll (a 1,000-block catch-up takes about 32 polls). */
const JUMP_WALK_BLOCKS_PER_POLL = 32;
/**
 * Least time between two polls of one upstream that pollNow starts. A push arriving within the
 * gap of the previous pushed poll is answered by one poll at the gap's end, so a feed naming
 * blocks back to back (or lying) costs at most one tip poll per gap; blocks come seconds apart,
 * so a real one's poll is never held back.
 */
export const PUSH_POLL_MIN_GAP_MS = 100;
/**
 * Longest an answer waits for the check of the block it names (verifyCanonical): a check that
 * hangs must not hold a client's answer for the whole request deadline. Past it the answer is
 * stored as `tip`; the check goes on, and what it records makes later answers final.
 */
const CHECK_WAIT_MS = 2_000;
/** Checks of canonical blocks (verifyCanonical) in flight at once; beyond it answers stay `tip`. */
const CHECKS_IN_FLIGHT = 64;
/** A block hash as the upstream's block route takes it: nothing else (and no height but a whole number) goes into a check's path. */
const BLOCK_HASH = /^0x[0-9a-fA-F]{64}$/;

/**
 * Longest a conditional poll stands for the burn tip: a 304 hides burn blocks that came without a
 * Stacks block, so a poll this long after an upstream's last full answer asks without
 * If-None-Match (the upstream runs the same query either way; only the body's bytes are extra).
 */
export const BURN_TIP_REFRESH_MS = 5_000;

/** At most this much of an upstream's own error text goes into a tip poll's error. */
const UPSTREAM_SAYS_CHARS = 200;

/** `: <its error or message>` when an answer is an error in the upstream's JSON shape, else nothing. */
function upstreamSays(body: Buffer): string {
  const parsed = parseJson<{ error?: unknown; message?: unknown }>(body);
  if (parsed === null || typeof parsed !== 'object') return '';
  const said = typeof parsed.message === 'string' ? parsed.message : typeof parsed.error === 'string' ? parsed.error : undefined;
  return said === undefined ? '' : `: ${said.slice(0, UPSTREAM_SAYS_CHARS)}`;
}

/** Tip polls and checks are upstream answers too: parsed within the heap budget (bounded-json.ts). */
function parseJson<T>(body: Buffer): T | undefined {
  return parseBoundedJson(body) as T | undefined;
}

export class ChainTipTracker {
  private current: ChainTip | undefined;
  private currentOrigin: string | undefined;
  /** Last tip and ETag each upstream sent, for If-None-Match, and when (monotonic ms) its last full answer came. */
  private readonly perUpstream = new Map<string, { etag: string; tip: ChainTip; fullAt: number }>();
  private readonly evidence: TipEvidence;
  private readonly finality: FinalityWatermark;
  private readonly reorgs = new ReorgLog();
  /** The reference for fork search. */
  private readonly history = new TipHistory();
  /** Verified canonical blocks: what makes an answer final (cache/chain-position.ts). */
  private readonly record = new CanonicalRecord();
  private readonly walks = new ParentWalks(JUMP_WALK_BLOCKS_PER_POLL);
  /** Upstreams whose jumped tip is held now (logged once while it lasts). */
  private readonly holding = new Set<string>();
  /** Upstreams whose far burn tip is not believed now (logged once while it lasts). */
  private readonly burnHeld = new Set<string>();
  /** verifyCanonical's checks in flight, one per block hash. */
  private readonly checks = new Map<string, Promise<void>>();
  private snapshot: ChainView = { reorgs: [] };
  /** Each upstream's poll in flight (at most one), and its next scheduled one. */
  private readonly polls = new Map<string, Promise<boolean>>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Answers are judged one at a time, in the order they arrive. */
  private judging: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Principals' activity, published with the chain view for the policy (attachActivity). */
  private activity: ActivityView | undefined;
  /** Told of each newly believed tip, in the turn it is published (see onNewTip). */
  private readonly tipListeners: TipListener[] = [];
  private readonly pollListeners: PollListener[] = [];
  /** Each upstream's poll interval (setIntervalFor: the push feed's); otherwise pollIntervalMs. */
  private intervalFor: ((origin: string) => number) | undefined;
  /** Upstreams asked to poll now while a poll of theirs was in flight: polled again when it ends. */
  private readonly again = new Set<string>();
  /** When pollNow last started a poll of each upstream, and the poll it holds for the end of the gap. */
  private readonly pushedAt = new Map<string, number>();
  private readonly heldPushes = new Map<string, NodeJS.Timeout>();
  private started = false;

  constructor(
    private readonly upstream: TipSource,
    private readonly health: TipReceiver,
    private readonly settings: ChainTipSettings,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {
    this.finality = new FinalityWatermark(settings.burnConfirmations);
    this.evidence = new TipEvidence({ maxJumpBlocks: settings.maxJumpBlocks });
  }

  /**
   * `listener` is called with each newly believed tip (`reorg`: it does not extend the previous
   * one), synchronously, just before the tip is published: nothing decides on the new tip
   * before the listener has seen it. It must not throw or block (errors are dropped).
   */
  onNewTip(listener: TipListener): void {
    this.tipListeners.push(listener);
  }

  /**
   * `listener` is called with each upstream's tip as its poll answered it (a 304 repeats the
   * last), once the answer was judged, whether or not it was believed (the push feed compares it
   * with what its notifications announced). It must not throw or block (errors are dropped).
   */
  onPolled(listener: PollListener): void {
    this.pollListeners.push(listener);
  }

  /**
   * How long after its previous poll each upstream is polled next: the push feed lengthens it
   * while it is believed (the poll is then a cross-check). Not given: chainTip.pollIntervalMs.
   */
  setIntervalFor(intervalFor: (origin: string) => number): void {
    this.intervalFor = intervalFor;
  }

  /**
   * Polls that upstream now (a push said a block arrived), then reschedules its next poll. A poll
   * already in flight may have been asked before the block existed: one more runs when it ends.
   * Within PUSH_POLL_MIN_GAP_MS of the previous poll pollNow started, the poll waits for the gap's
   * end (one poll for every push in between). The gap is timed on the monotonic clock, not the
   * wall clock: it is a rate, and a clock a test holds still must not hold polls back forever.
   * The answer is judged like any poll's: a push is only a reason to ask, never evidence.
   */
  pollNow(origin: string): void {
    if (this.stopped || !this.upstream.origins.includes(origin)) return;
    if (this.polls.has(origin)) {
      this.again.add(origin);
      return;
    }
    // One poll is already held for the end of the gap: it answers this push too.
    if (this.heldPushes.has(origin)) return;
    const wait = (this.pushedAt.get(origin) ?? Number.NEGATIVE_INFINITY) + PUSH_POLL_MIN_GAP_MS - performance.now();
    if (wait > 0) {
      const held = setTimeout(() => {
        this.heldPushes.delete(origin);
        this.pollPushed(origin);
      }, wait);
      held.unref();
      this.heldPushes.set(origin, held);
      return;
    }
    this.pollPushed(origin);
  }

  /** pollNow's poll, past the gap (a poll in flight by now is joined and followed by one more). */
  private pollPushed(origin: string): void {
    if (this.stopped) return;
    if (this.polls.has(origin)) {
      this.again.add(origin);
      return;
    }
    this.pushedAt.set(origin, performance.now());
    clearTimeout(this.timers.get(origin));
    this.timers.delete(origin);
    void this.pollUpstream(origin).then(() => this.schedule(origin));
  }

  /** The activity registry the policy reads through ChainView.activity (none: the view carries none). */
  attachActivity(activity: ActivityView): void {
    this.activity = activity;
    this.publish();
  }

  get tip(): ChainTip | undefined {
    return this.current;
  }

  view(): ChainView {
    return this.snapshot;
  }

  /** Polls each upstream every `pollIntervalMs` after its previous poll ended (the caller usually awaited a first pollOnce). */
  start(): void {
    this.started = true;
    for (const origin of this.upstream.origins) this.schedule(origin);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const held of this.heldPushes.values()) clearTimeout(held);
    this.heldPushes.clear();
    await Promise.all([...this.polls.values()].map((poll) => this.within(poll)));
  }

  /**
   * Polls every upstream once (joining a poll already in flight) and resolves when each has
   * answered and been judged, or its `pollTimeoutMs` passed. Never throws (errors go to telemetry).
   */
  async pollOnce(): Promise<void> {
    const origins = this.upstream.origins;
    const answered = await Promise.all(origins.map((origin) => this.within(this.pollUpstream(origin))));
    // A hung upstream fails only when its request times out, much later: /ready says why meanwhile.
    origins.forEach((origin, i) => {
      if (!answered[i]) this.health.reportNoAnswer?.(origin, this.settings.pollTimeoutMs);
    });
    if (!answered.includes(true)) this.telemetry.tipPollFailed(new Error('no upstream answered the chain tip poll in time'));
  }

  /** The next poll of that upstream, replacing one scheduled (after start() only: tests drive polls themselves before). */
  private schedule(origin: string): void {
    if (this.stopped || !this.started) return;
    clearTimeout(this.timers.get(origin));
    const timer = setTimeout(
      () => {
        this.timers.delete(origin);
        void this.pollUpstream(origin).then(() => this.schedule(origin));
      },
      this.intervalFor?.(origin) ?? this.settings.pollIntervalMs,
    );
    timer.unref();
    this.timers.set(origin, timer);
  }

  /** One upstream's poll, judged once it answered; one at a time per upstream. True when it answered. */
  private pollUpstream(origin: string): Promise<boolean> {
    let poll = this.polls.get(origin);
    if (!poll) {
      poll = this.fetchTip(origin)
        .then((tip) => (tip ? this.judgeInTurn(origin, tip).then(() => this.polled(origin, tip)) : false))
        .catch((error: unknown) => {
          this.telemetry.tipPollFailed(error);
          return false;
        })
        .finally(() => {
          this.polls.delete(origin);
          if (this.again.delete(origin)) this.pollNow(origin);
        });
      this.polls.set(origin, poll);
    }
    return poll;
  }

  private polled(origin: string, tip: ChainTip): true {
    for (const listener of this.pollListeners) {
      try {
        listener(origin, tip);
      } catch {
        // As for tip listeners.
      }
    }
    return true;
  }

  /** The poll's own timeout: false when it has not ended within `pollTimeoutMs`. */
  private within(poll: Promise<boolean>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.settings.pollTimeoutMs);
      timer.unref();
    });
    return Promise.race([poll, timeout]).finally(() => clearTimeout(timer));
  }

  /** One upstream's tip: a 304 repeats the last one it sent. Failures leave it out. */
  private async fetchTip(origin: string): Promise<ChainTip | undefined> {
    const stored = this.perUpstream.get(origin);
    // Past BURN_TIP_REFRESH_MS the poll asks in full: a 304 would hide a burn block without a Stacks block.
    const known = stored && performance.now() - stored.fullAt < BURN_TIP_REFRESH_MS ? stored : undefined;
    const headers: Record<string, string> = known ? { 'if-none-match': known.etag } : {};
    this.telemetry.tipPolled();
    const response = await this.upstream.getFrom(origin, { path: '/extended', route: 'chain_tip', headers, purpose: 'tip_poll' });
    if (response.status === 304 && known) return known.tip;
    const tip = response.status === 200 ? parseJson<StatusBody>(response.body)?.chain_tip : undefined;
    if (!tip || typeof tip.block_height !== 'number' || typeof tip.index_block_hash !== 'string') {
      // Named after its upstream (the status page shows it there). A failure the client already
      // judged (a gateway 5xx, a 429) keeps its kind and words; anything else (a refused API key,
      // a 200 that is no tip) says what came, with the upstream's own words when it sent some.
      const verdict = judgeAnswer({
        upstream: origin,
        status: response.status,
        headers: response.headers,
        body: response.body,
        conditional: known !== undefined,
        path: '/extended',
      });
      if (verdict.kind === 'failure') throw verdict.error;
      throw new UpstreamError('invalid', origin, `chain tip poll of ${origin} answered ${response.status} without a chain_tip${upstreamSays(response.body)}`);
    }
    const parsed: ChainTip = { height: tip.block_height, indexBlockHash: tip.index_block_hash, burnHeight: tip.burn_block_height ?? 0 };
    if (typeof tip.block_hash === 'string') parsed.blockHash = tip.block_hash;
    if (response.headers.etag) this.perUpstream.set(origin, { etag: response.headers.etag, tip: parsed, fullAt: performance.now() });
    return parsed;
  }

  private judgeInTurn(origin: string, tip: ChainTip): Promise<void> {
    const turn = this.judging.then(() => this.judge(origin, tip));
    this.judging = turn.catch(() => undefined);
    return turn;
  }

  /**
   * What one upstream's tip means: a held jump is neither believed nor reported as that
   * upstream's height (it would make every other upstream look lagging); a believed tip is
   * checked against the chain (reorg or correction) and moves the finality watermark.
   */
  private async judge(origin: string, tip: ChainTip): Promise<void> {
    const believed = this.current && this.currentOrigin ? { tip: this.current, origin: this.currentOrigin } : undefined;
    const judgement = this.evidence.judge(origin, tip, believed);
    if (judgement.kind === 'hold') {
      const linked = believed !== undefined && (await this.walkJump(origin, tip, believed.tip)) === 'linked';
      this.publish(); // the reported heights bound what answers may claim, held ones included
      if (!linked) {
        // Logged once while it lasts: an upstream that stays wrong would otherwise log every poll.
        if (!this.holding.has(origin)) this.telemetry.tipJumpHeld(origin, this.current ?? tip, tip);
        this.holding.add(origin);
        return;
      }
    } else this.walks.end(origin);
    this.holding.delete(origin);
    this.health.reportTip(origin, tip.height);
    if (judgement.kind === 'keep') {
      if (judgement.leader) this.currentOrigin = judgement.leader;
      if (this.current?.indexBlockHash === tip.indexBlockHash) await this.burnTipReported(origin, tip);
      return;
    }
    // The Stacks tip is believed; the burn tip it came with only when something vouches for it
    // (it makes data final): otherwise the believed burn tip stays, and the block's anchor lifts it.
    await this.advanceTo({ ...tip, burnHeight: this.vouchedBurnHeight(origin, tip) }, origin);
    this.currentOrigin = origin;
    await this.readAnchor(origin, tip.burnHeight);
    await this.advanceFinality(origin);
  }

  /**
   * The believed tip block, reported again with a higher burn tip (burn blocks without a Stacks
   * block): the burn tip moves on, finality with it. A burn tip further ahead than maxJumpBlocks
   * is not believed on one report (it would make recent data final): a new block's anchor, or
   * another upstream near it, lifts it.
   */
  private async burnTipReported(origin: string, tip: ChainTip): Promise<void> {
    const current = this.current;
    if (!current || tip.burnHeight <= current.burnHeight) return;
    const burnHeight = this.vouchedBurnHeight(origin, tip);
    if (burnHeight <= current.burnHeight) return;
    this.current = { ...current, burnHeight };
    this.telemetry.tipBurnHeights(this.current);
    await this.advanceFinality(this.currentOrigin ?? origin);
  }

  /** The burn tip to believe with this report (TipEvidence.vouchedBurnHeight); a far one not vouched for is logged once while it lasts. */
  private vouchedBurnHeight(origin: string, tip: ChainTip): number {
    const vouched = this.evidence.vouchedBurnHeight(origin, tip.burnHeight, this.current?.burnHeight);
    if (!vouched.held) this.burnHeld.delete(origin);
    else if (!this.burnHeld.has(origin)) {
      this.burnHeld.add(origin);
      if (this.current) this.telemetry.tipJumpHeld(origin, this.current, tip);
    }
    return vouched.burnHeight;
  }

  /** The finality watermark moved on for the believed tip (its burn tip and anchor as known now), then published. */
  private async advanceFinality(origin: string): Promise<void> {
    const tip = this.current;
    if (!tip) return;
    const watermark = await this.finality.advance(tip, (burnHeight) => this.blockAtBurn(burnHeight, origin));
    if (watermark) this.record.remember(watermark);
    this.publish();
  }

  /**
   * The believed tip block's own anchor, from the block itself (by index block hash, from the
   * upstream that reported it): canonical, the block the status named, anchored no higher than
   * the burn tip reported with it (`reportedBurnHeight`). Then it is recorded as the canonical block at its height, and
   * the finality search can start at its anchor. A failed or odd read leaves the anchor unknown:
   * that costs no answer anything (the burn tip alone bounds finality).
   */
  private async readAnchor(origin: string, reportedBurnHeight: number): Promise<void> {
    const tip = this.current;
    if (!tip || !BLOCK_HASH.test(tip.indexBlockHash)) return;
    let block: CanonicalBlock | undefined;
    try {
      block = await this.canonicalBlockAt(origin, tip.indexBlockHash.toLowerCase());
    } catch {
      return;
    }
    const same = block !== undefined && block.height === tip.height && block.indexBlockHash.toLowerCase() === tip.indexBlockHash.toLowerCase();
    if (!block || !same || (reportedBurnHeight > 0 && block.burnHeight > reportedBurnHeight)) return;
    const current = this.current;
    if (current?.indexBlockHash !== tip.indexBlockHash) return; // another tip was believed meanwhile
    // The burn chain reaches at least the anchor of a believed block.
    const burnHeight = Math.max(current.burnHeight, block.burnHeight);
    this.current = { ...current, burnHeight, anchorBurnHeight: block.burnHeight, blockHash: current.blockHash ?? block.blockHash };
    this.record.remember(block);
    this.telemetry.tipBurnHeights(this.current);
    this.publish();
  }

  /** The jumped tip's parent chain, walked on by one poll's worth of blocks. Failures: still walking. */
  private walkJump(origin: string, tip: ChainTip, believed: ChainTip): Promise<WalkResult> {
    const blockAt = (height: number) => this.blockOf(origin, String(height));
    return this.walks.step(origin, tip, believed, blockAt).catch((error: unknown): WalkResult => {
      this.telemetry.tipPollFailed(error);
      return 'walking';
    });
  }

  /**
   * Checks that a block an answer names is the canonical one at its height, with the upstream
   * that gave the believed tip (see checkOrigin), by the block's own hash (/extended/v2/blocks/
   * {block_hash}: another URL than a by-height answer's, so a wrong answer on one URL does not
   * confirm itself); when that is not a canonical block at the height claimed, the canonical
   * block at that height is asked for instead. What it learns is recorded when canonical and at
   * or below the watermark (in height and burn height); the answer is then admitted again
   * against the record, which says whether it is final or contradicts the chain. At most two
   * requests per block, one check per block at a time, at most CHECKS_IN_FLIGHT at once, waited
   * for at most CHECK_WAIT_MS. Never throws: a block not checked (in time) leaves the answer `tip`.
   */
  verifyCanonical(block: BlockRef): Promise<void> {
    const key = block.blockHash.toLowerCase();
    const running = this.checks.get(key);
    if (running) return this.atMostCheckWait(running);
    if (this.checks.size >= CHECKS_IN_FLIGHT) return Promise.resolve();
    const check = this.checkCanonical(block)
      .catch(() => undefined)
      .finally(() => this.checks.delete(key));
    this.checks.set(key, check);
    return this.atMostCheckWait(check);
  }

  /** A check's end, or CHECK_WAIT_MS, whichever comes first: a slow check leaves the answer `tip`, and goes on for later ones. */
  private atMostCheckWait(check: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CHECK_WAIT_MS);
      timer.unref();
    });
    return Promise.race([check, waited]).finally(() => clearTimeout(timer));
  }

  private async checkCanonical({ height, blockHash }: BlockRef): Promise<void> {
    const origin = this.checkOrigin();
    const { finalStacksHeight } = this.snapshot;
    const checkable = Number.isSafeInteger(height) && height >= 0 && BLOCK_HASH.test(blockHash);
    if (!origin || !checkable || finalStacksHeight === undefined || height > finalStacksHeight) return;
    let block = await this.canonicalBlockAt(origin, blockHash.toLowerCase());
    // Not that block there (none by that hash, or elsewhere): the canonical one at that height,
    // which the answer's block then contradicts.
    if (block?.height !== height) block = await this.canonicalBlockAt(origin, String(height));
    // The believed chain may have come down while it was asked: judged against the watermark now.
    const now = this.snapshot;
    if (!block || now.finalStacksHeight === undefined || now.finalBurnHeight === undefined) return;
    if (block.height > now.finalStacksHeight || block.burnHeight > now.finalBurnHeight) return;
    this.record.remember(block);
  }

  private async advanceTo(next: ChainTip, origin: string): Promise<void> {
    const previous = this.current;
    const hashAt = (height: number) => this.canonicalHashAt(height, origin);
    const reorg = previous !== undefined && !(await extendsTip(previous, next.height, hashAt));
    if (previous && reorg) {
      // A reorg, or the correction of a wrong tip: what was validated under the old one is suspect.
      const forkHeight = await findForkHeight(Math.min(previous.height, next.height), this.settings.reorgMaxWalk, this.history, hashAt);
      const record = { at: this.clock(), forkHeight };
      this.reorgs.add(record);
      this.history.forgetAbove(forkHeight);
      this.record.forgetAbove(forkHeight);
      this.finality.lowerTo(forkHeight);
      this.telemetry.reorgDetected(record.forkHeight, previous, next);
    }
    // The burn chain does not come down when the Stacks tip moves on: an upstream whose status
    // was read a moment before the latest burn block keeps the burn tip already seen.
    const burnHeight = previous && !reorg ? Math.max(previous.burnHeight, next.burnHeight) : next.burnHeight;
    this.current = { ...next, burnHeight };
    this.history.remember(next.height, next.indexBlockHash);
    // Recorded as the canonical block at its height (what learned freshness leans on), without
    // an anchor: the status's burn height is the burn chain's tip, not where this block is
    // anchored. readAnchor completes the record.
    this.record.remember({ height: next.height, indexBlockHash: next.indexBlockHash, blockHash: next.blockHash });
    this.telemetry.tipChanged(this.current);
    for (const listener of this.tipListeners) {
      try {
        listener(this.current, origin, reorg);
      } catch {
        // A listener's fault must not stop the tip (its own state stays conservative).
      }
    }
    // Published at once: entries validated from here on carry the new tip.
    this.publish();
  }

  /** One upstream's /extended/v2/blocks/{height or hash}: its JSON, undefined when not found; other statuses throw. */
  private async blockOf(origin: string, heightOrHash: string): Promise<unknown> {
    const response = await this.upstream.getFrom(origin, { path: `/extended/v2/blocks/${heightOrHash}`, route: 'chain_tip', purpose: 'block_check' });
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new Error(`block ${heightOrHash} of ${origin} answered ${response.status}`);
    return parseJson<unknown>(response.body);
  }

  private async canonicalBlockAt(origin: string, heightOrHash: string): Promise<CanonicalBlock | undefined> {
    return canonicalBlockOf(await this.blockOf(origin, heightOrHash));
  }

  /**
   * Who answers a check: the upstream that gave the believed tip (the watermark is its chain),
   * else, while it is not usable, the first one that is. Not through the request queue: a check
   * runs while the answer it checks holds a slot of it.
   */
  private checkOrigin(): string | undefined {
    const usable = this.upstream
      .status()
      .filter((u) => u.usable)
      .map((u) => u.origin);
    return this.currentOrigin !== undefined && usable.includes(this.currentOrigin) ? this.currentOrigin : usable[0];
  }

  private async canonicalHashAt(height: number, origin: string): Promise<string | undefined> {
    const response = await this.upstream.getFrom(origin, { path: `/extended/v2/blocks/${height}`, route: 'chain_tip', purpose: 'fork_search' });
    if (response.status !== 200) return undefined;
    return parseJson<{ index_block_hash?: string }>(response.body)?.index_block_hash;
  }

  private async blockAtBurn(burnHeight: number, origin: string): Promise<BurnBlockAnswer | undefined> {
    const response = await this.upstream.getFrom(origin, {
      path: `/extended/v1/block/by_burn_block_height/${burnHeight}`,
      route: 'chain_tip',
      purpose: 'finality',
    });
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new Error(`by_burn_block_height/${burnHeight} of ${origin} answered ${response.status}`);
    return parseJson<BurnBlockAnswer>(response.body) ?? {};
  }

  private publish(): void {
    const tip = this.current;
    const watermark = this.finality.block(tip);
    const reported = this.evidence.highestReported();
    const margin = this.settings.maxJumpBlocks;
    this.snapshot = {
      tipHash: tip?.indexBlockHash,
      tipHeight: tip?.height,
      burnHeight: tip?.burnHeight,
      tipAnchorBurnHeight: tip?.anchorBurnHeight,
      finalBurnHeight: watermark?.burnHeight,
      finalStacksHeight: watermark?.height,
      heightCeiling: reported && Math.max(reported.height, tip?.height ?? 0) + margin,
      // A tip poll without a burn height (read as 0) bounds nothing.
      burnCeiling: reported && reported.burnHeight > 0 ? Math.max(reported.burnHeight, tip?.burnHeight ?? 0) + margin : undefined,
      canonical: this.record,
      reorgs: this.reorgs.list(),
    };
    if (this.activity) this.snapshot.activity = this.activity;
  }
}
