import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** The fake upstream's public interface: what tests, scripts and the bench drive it with. */
import type { FakeRpcChannel } from '../live-upstream/ws-rpc-channel.js';
import type { HeldAnswers } from './holds.js';

export interface FakeUpstreamOptions {
  /** 0 or absent: a random free port. */
  port?: number;
  /**
   * How principal ETags (the address routes') move. `every-block` (the default): with every new
   * tip and mempool change, more often than the upstream's, so tests see revalidations answered
   * in full. `exact`: as the upstream's, only when a transaction involving that principal (as
   * sender or token-transfer recipient) is mined or enters the mempool, and on a reorg.
   */
  principalEtags?: 'every-block' | 'exact';
  /**
   * Serve the upstream's JSON-RPC channel on /extended/v1/ws (testkit/live-upstream/ws-rpc-channel.ts):
   * subscribe replies as the upstream's, and `block`, `mempool` and `tx_update` pushed as the
   * chain moves. Off (the default), /extended/v1/ws echoes like the other WebSocket paths,
   * which the passthrough tunnel tests rely on.
   */
  rpcChannel?: boolean;
}

export interface RecordedRequest {
  /** The HTTP method, or `UPGRADE` for a WebSocket upgrade. */
  method: string;
  /** Path and raw query, as received. */
  url: string;
  /** `url` without its query. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * How an injected failure answers: a status (with an optional body, and headers that replace or
 * add to the JSON defaults, e.g. `retry-after` or `content-type`), a transport-level fault, or
 * a well-formed answer about another resource (`answerAs`: what the fake answers for that
 * path and query instead, status, headers and body).
 * A status answers at once, before any request body is read; with `close` the fake then reads
 * 1 MiB more of the body and drops the connection (as a server refusing a large upload does),
 * so the rest of the body cannot be sent.
 * `stall-body`: a 200 whose headers and first body bytes arrive, then nothing more.
 */
export type FailureMode =
  { status: number; body?: string; headers?: Record<string, string>; close?: boolean } | { answerAs: string } | 'reset' | 'hang' | 'garbage' | 'stall-body';

/**
 * A pushing channel served on its own path prefix (testkit/live-upstream): its HTTP requests
 * (when it takes them) and WebSocket upgrades go to it instead of the routes and the echo.
 */
export interface AttachedChannel {
  prefix: string;
  request?(req: IncomingMessage, res: ServerResponse): void;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface FakeUpstream {
  url: string;
  port: number;
  /** Every request received, in order (HTTP and WebSocket upgrades, failed ones included). */
  requests: RecordedRequest[];
  /** A string matches the path (no query) or the whole url; a RegExp is tested on the url. */
  count(match?: string | RegExp | ((r: RecordedRequest) => boolean)): number;
  /** Clears `requests` and `peakInFlight`. */
  resetCounts(): void;
  /** The most HTTP requests it was answering at one time (since the last resetCounts). */
  readonly peakInFlight: number;
  /** WebSocket connections open now. */
  readonly openWebSockets: number;
  /** The JSON-RPC channel (started with `rpcChannel: true`; throws otherwise). */
  readonly rpc: FakeRpcChannel;
  /**
   * The tip block: `burn_block_height` is its anchor (its own burn block); `burn_tip_height` is the
   * burn chain's tip, which GET /extended reports as `chain_tip.burn_block_height` (§5) and which
   * is higher when burn blocks came without a Stacks block (advanceBurn, mineOrphan).
   */
  tip(): { height: number; index_block_hash: string; block_hash: string; burn_block_height: number; burn_tip_height: number };
  /**
   * Appends `blocks` (default 1) empty canonical blocks. `tenure: 'new'` (the default): each opens
   * a new tenure, in the announced burn block when advanceBurn left one without a Stacks block,
   * otherwise in a new burn block (one burn block higher each). `tenure: 'same'`: each extends
   * the tip's tenure, at the same burn height and tenure_height (by_burn_block_height answers the
   * highest of them).
   */
  advanceTip(blocks?: number, options?: { tenure?: 'new' | 'same' }): void;
  /**
   * Mines `blocks` (default 1) burn blocks without a Stacks block: GET /extended's burn_block_height
   * moves, its ETag does not (a conditional poll answers 304), and by_burn_block_height answers 404
   * for them. `advanceBurn(1)` then `advanceTip()`: the burn block announced before its tenure.
   */
  advanceBurn(blocks?: number): void;
  /**
   * Mines a block on top of the tip in a new tenure that lost (`canonical: false`): the tip stays,
   * the burn tip moves to its burn block (unless one was announced without a block), and
   * by_burn_block_height there answers the orphan. Returns where it is.
   */
  mineOrphan(): { height: number; index_block_hash: string; burn_block_height: number };
  /**
   * GET /extended reports a made-up tip `blocks` Stacks and burn blocks ahead of the real one
   * (as a node with a wrong view would), until called with 0; nothing else changes.
   */
  jumpTip(blocks: number): void;
  /** Orphans the last `depth` blocks and mines `depth + 1` new ones from the fork point. */
  reorg(depth: number): void;
  /** Adds a pending token transfer (a copy of the recorded pending tx); returns its id. */
  addPendingTx(txId?: string): string;
  /** Mines a pending tx into a new block on top of the tip. */
  confirmTx(txId: string): void;
  /**
   * Holds back the answers to matching requests (as `count` matches them) until `release()`:
   * they are recorded as they arrive and answered (faults and chain as they are then) on release.
   */
  hold(match: string | RegExp | ((r: RecordedRequest) => boolean)): HeldAnswers;
  /** Delays every answer, or those whose url matches; 0 switches delays off. */
  setDelay(ms: number, match?: RegExp): void;
  /** The next `n` requests (whose url matches) fail in the given way. */
  failNext(n: number, how: FailureMode, match?: RegExp): void;
  /** Every request (whose url matches) fails in the given way until called with `null`. */
  setFailing(how: FailureMode | null, match?: RegExp): void;
  /** Moves `mempool_updated_at` (the mempool ETag) without any other change. */
  setMempoolChanged(): void;
  /** Serves `channel` on its path prefix until the returned function is called (opt-in: the echo answers otherwise). */
  attach(channel: AttachedChannel): () => void;
  /** Closes the server, its sockets and WebSockets, and drops delayed and hanging requests. */
  close(): Promise<void>;
}
