/**
 * What the primary and its workers tell each other over the cluster's IPC channel. Every message
 * carries a `type` under the `scp:` prefix, so that prom-client's own messages and anything else
 * on the channel are told apart; a message that does not match is ignored.
 */
import type { WorkerMetrics } from '../telemetry/worker-metrics.js';

/** A worker's listeners are open: its public address and its private admin listener. */
export interface WorkerReady {
  type: 'scp:ready';
  boundUrl: string;
  url: string;
  adminUrl: string;
}

/** The primary asks a worker for its metrics (answered with `scp:metrics`, same `id`). */
export interface MetricsRequest {
  type: 'scp:metrics?';
  id: number;
}

export interface MetricsAnswer {
  type: 'scp:metrics';
  id: number;
  metrics: WorkerMetrics;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

export function isWorkerReady(message: unknown): message is WorkerReady {
  return isObject(message) && message.type === 'scp:ready' && typeof message.url === 'string' && typeof message.adminUrl === 'string';
}

export function isMetricsRequest(message: unknown): message is MetricsRequest {
  return isObject(message) && message.type === 'scp:metrics?' && typeof message.id === 'number';
}

export function isMetricsAnswer(message: unknown): message is MetricsAnswer {
  return isObject(message) && message.type === 'scp:metrics' && typeof message.id === 'number' && Array.isArray(message.metrics);
}

/*
 * Single-flight through the primary (worker mode without Redis: worker-flight.ts, flight-coordinator.ts).
 * A worker about to fetch `key` asks; the first asker is answered `lead` at once, the others when
 * the leader is done: `filled` with its entry's encoded bytes (entry.ts, as the Redis tier stores
 * them), or `released` (the leader failed, died or held the key too long: fetch yourself);
 * `refused` when the primary holds as many keys or waiters as it may.
 */

/** Keys longer than this are not coordinated (a cache key is a route and a URL: far shorter). */
export const MAX_FLIGHT_KEY_CHARS = 8_192;

/** A worker asks to fetch `key` (answered with `scp:flight`, same `id`). */
export interface FlightAsk {
  type: 'scp:flight?';
  id: number;
  key: string;
}

/**
 * `wanted`: sent to a leader when its first waiter joins, so that only a flight somebody waits for
 * ships its entry through the primary (a flood of distinct misses sends no bodies over IPC).
 */
export type FlightAnswer =
  | { type: 'scp:flight'; id: number; result: 'lead' | 'wanted' | 'released' | 'refused' }
  | { type: 'scp:flight'; id: number; result: 'filled'; bytes: Uint8Array };

/** The leader of `id` is done: `bytes`, the entry it stored, encoded; absent when it stored none. */
export interface FlightDone {
  type: 'scp:flight!';
  id: number;
  key: string;
  bytes?: Uint8Array;
}

const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isKey = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= MAX_FLIGHT_KEY_CHARS;

export function isFlightAsk(message: unknown): message is FlightAsk {
  return isObject(message) && message.type === 'scp:flight?' && isId(message.id) && isKey(message.key);
}

export function isFlightDone(message: unknown): message is FlightDone {
  return (
    isObject(message) &&
    message.type === 'scp:flight!' &&
    isId(message.id) &&
    isKey(message.key) &&
    (message.bytes === undefined || message.bytes instanceof Uint8Array)
  );
}

export function isFlightAnswer(message: unknown): message is FlightAnswer {
  if (!isObject(message) || message.type !== 'scp:flight' || !isId(message.id)) return false;
  if (message.result === 'filled') return message.bytes instanceof Uint8Array;
  return message.result === 'lead' || message.result === 'wanted' || message.result === 'released' || message.result === 'refused';
}

/*
 * One tip poll and push feed per host (tip-leader.ts, worker-tip-share.ts): the primary designates one
 * worker the tip leader (`scp:tip-lead`); the leader's news goes through the primary to every other
 * worker, which acts on it through its own tracker (a notice is a reason to poll, never evidence).
 */

/** Primary to a worker: from now on you poll the tip on the interval and follow the push feed. */
export interface TipLead {
  type: 'scp:tip-lead';
}

/** The leader: a poll of `origin` answered something new (or other than the believed tip): poll it now. */
export interface TipNews {
  type: 'scp:tip-news';
  origin: string;
}

/** The leader: the push feed's pending transaction named these principals (their activity changed). */
export interface MempoolNews {
  type: 'scp:mempool-news';
  principals: string[];
}

/**
 * The leader: its mempool watcher polled (chain/mempool-watcher.ts): what the poll found, for each
 * follower's activity registry, which runs no watcher of its own. `leaderId` names the watcher
 * that polled (a new leader, a new id) and `seq` counts its polls from 1: a follower that missed
 * one, or hears a new watcher, takes the poll as a change in ways not known (see worker-tip-share.ts).
 * A changed poll naming more than MAX_NEWS_PRINCIPALS principals is sent as `unknown`.
 */
export interface MempoolPollNews {
  type: 'scp:mempool-poll';
  leaderId: string;
  seq: number;
  kind: 'unchanged' | 'changed' | 'unknown';
  principals: string[];
  /** Of `principals`, the senders and what the mempool list files the changed txs under (chain/tx-roles.ts); absent: not told apart. */
  senders?: string[];
  listed?: string[];
  startedAt: number;
  endedAt: number;
}

/**
 * The leader: what its block learner found in a block (chain/block-learner.ts), for the followers,
 * which wait for it instead of asking the upstream for the block's transactions and events
 * themselves. `txIds`: the block's transaction ids, for each follower's warm-up.
 */
export interface BlockLearnedNews {
  type: 'scp:block-learned';
  block: { height: number; indexBlockHash: string; burnHeight: number };
  kind: 'known' | 'unknown';
  principals: string[];
  coinbaseRecipients: string[];
  /** Of `principals`, those in each narrower role (chain/activity.ts BlockTouches); absent: not told apart. */
  tokenPrincipals?: string[];
  senderPrincipals?: string[];
  listedPrincipals?: string[];
  why: string;
  txIds: string[];
}

/** A block's principals in one notice; a block naming more is relayed as unknown. */
export const MAX_LEARNED_PRINCIPALS = 65_536;
/** A block's transaction ids in one notice (for the warm-up); more are not relayed. */
export const MAX_LEARNED_TX_IDS = 10_000;
const MAX_WHY_CHARS = 1_024;
/** An index block hash or a transaction id, as the upstream writes them. */
export const HEX_HASH = /^0x[0-9a-f]{64}$/;

/** An origin is a configured upstream's (checked by the tracker); longer than this is none. */
const MAX_ORIGIN_CHARS = 2_048;
/** A pending transaction names a handful of principals; a notice naming more is not relayed. */
export const MAX_NEWS_PRINCIPALS = 1_024;
const MAX_PRINCIPAL_CHARS = 256;

export function isTipLead(message: unknown): message is TipLead {
  return isObject(message) && message.type === 'scp:tip-lead';
}

export function isTipNews(message: unknown): message is TipNews {
  return isObject(message) && message.type === 'scp:tip-news' && typeof message.origin === 'string' && message.origin.length <= MAX_ORIGIN_CHARS;
}

const MAX_LEADER_ID_CHARS = 64;
const POLL_KINDS: ReadonlySet<unknown> = new Set(['unchanged', 'changed', 'unknown']);
/** At most `max` strings, each one `ok` accepts. */
const isStrings = (value: unknown, max: number, ok: (s: string) => boolean): value is string[] =>
  Array.isArray(value) && value.length <= max && value.every((v) => typeof v === 'string' && ok(v));
const isPrincipal = (p: string): boolean => p.length > 0 && p.length <= MAX_PRINCIPAL_CHARS;
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
/** An optional list: absent, or as isStrings. */
const isOptionalStrings = (value: unknown, max: number, ok: (s: string) => boolean): boolean => value === undefined || isStrings(value, max, ok);

export function isMempoolPollNews(message: unknown): message is MempoolPollNews {
  return (
    isObject(message) &&
    message.type === 'scp:mempool-poll' &&
    typeof message.leaderId === 'string' &&
    message.leaderId.length > 0 &&
    message.leaderId.length <= MAX_LEADER_ID_CHARS &&
    Number.isSafeInteger(message.seq) &&
    (message.seq as number) >= 1 &&
    POLL_KINDS.has(message.kind) &&
    isStrings(message.principals, MAX_NEWS_PRINCIPALS, isPrincipal) &&
    isOptionalStrings(message.senders, MAX_NEWS_PRINCIPALS, isPrincipal) &&
    isOptionalStrings(message.listed, MAX_NEWS_PRINCIPALS, isPrincipal) &&
    isTime(message.startedAt) &&
    isTime(message.endedAt)
  );
}

export function isBlockLearnedNews(message: unknown): message is BlockLearnedNews {
  if (!isObject(message) || message.type !== 'scp:block-learned' || !isObject(message.block)) return false;
  const { height, indexBlockHash, burnHeight } = message.block;
  return (
    Number.isSafeInteger(height) &&
    (height as number) >= 0 &&
    typeof indexBlockHash === 'string' &&
    HEX_HASH.test(indexBlockHash) &&
    Number.isSafeInteger(burnHeight) &&
    (burnHeight as number) >= 0 &&
    (message.kind === 'known' || message.kind === 'unknown') &&
    isStrings(message.principals, MAX_LEARNED_PRINCIPALS, isPrincipal) &&
    isStrings(message.coinbaseRecipients, MAX_LEARNED_PRINCIPALS, isPrincipal) &&
    isOptionalStrings(message.tokenPrincipals, MAX_LEARNED_PRINCIPALS, isPrincipal) &&
    isOptionalStrings(message.senderPrincipals, MAX_LEARNED_PRINCIPALS, isPrincipal) &&
    isOptionalStrings(message.listedPrincipals, MAX_LEARNED_PRINCIPALS, isPrincipal) &&
    typeof message.why === 'string' &&
    message.why.length <= MAX_WHY_CHARS &&
    isStrings(message.txIds, MAX_LEARNED_TX_IDS, (id) => HEX_HASH.test(id))
  );
}

export function isMempoolNews(message: unknown): message is MempoolNews {
  return isObject(message) && message.type === 'scp:mempool-news' && isStrings(message.principals, MAX_NEWS_PRINCIPALS, isPrincipal);
}
