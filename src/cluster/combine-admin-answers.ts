/**
 * One answer for a state-changing admin API call (a purge) that the primary of worker mode sent to
 * every worker: when every worker gave the same status, that answer, as a single process would
 * give it (a purge's counts added up across the workers); when they differ or one did not answer,
 * the worst status in the admin API's error shape, naming each worker that did not succeed. Pure.
 */
import type { PurgeSelector } from '../cache/purge.js';
import { reasonOf } from '../errors.js';
import type { WorkerRef } from './combine-status-reports.js';

/** A worker's answer as the primary read it. */
export interface WorkerHttpAnswer {
  status: number;
  /** Header names in lower case (node's IncomingMessage.headers). */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type WorkerAnswer = WorkerRef & ({ answer: WorkerHttpAnswer } | { error: string });

export interface CombinedAnswer {
  status: number;
  /** Name/value pairs for writeHead. */
  headers: string[];
  body: Buffer;
}

/** A worker that could not be asked, or did not answer: counted as a gateway failure. */
export const NO_ANSWER_STATUS = 502;

/** A purge's 200 body (admin-api.ts). */
interface PurgeAnswer {
  purged: { memory: number; redis: number | null };
  matched: PurgeSelector;
  coalesced: boolean;
}

/** Not copied from a worker's answer: they describe that connection or that body, not the combined one. */
const PER_MESSAGE_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);

const JSON_TYPE = 'application/json; charset=utf-8';

function isPurgeAnswer(value: unknown): value is PurgeAnswer {
  if (value === null || typeof value !== 'object') return false;
  const { purged, matched, coalesced } = value as Record<string, unknown>;
  if (purged === null || typeof purged !== 'object' || matched === null || typeof matched !== 'object' || typeof coalesced !== 'boolean') return false;
  const { memory, redis } = purged as Record<string, unknown>;
  return typeof memory === 'number' && (typeof redis === 'number' || redis === null);
}

function parsePurgeAnswer(body: Buffer): PurgeAnswer | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return isPurgeAnswer(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What was purged across the workers. Each worker widens a block purge by the entries it holds
 * itself (admin-api.ts), so their refs are united; any other selector is the same on every
 * worker unless one coalesced it into an `all` (purge-coalescer.ts): the first worker's is kept.
 */
function combineMatched(matched: PurgeSelector[]): PurgeSelector {
  const first = matched[0] as PurgeSelector;
  if (!matched.every((m) => m.kind === 'block')) return first;
  const blocks = matched as Array<Extract<PurgeSelector, { kind: 'block' }>>;
  return { kind: 'block', refs: [...new Set(blocks.flatMap((b) => b.refs))], burnHeights: [...new Set(blocks.flatMap((b) => b.burnHeights))] };
}

/** The purge answers added up: memory entries removed on every worker, Redis keys (each removed by one worker only). */
export function sumPurgeAnswers(answers: PurgeAnswer[]): PurgeAnswer {
  const redis = answers.map((a) => a.purged.redis);
  return {
    purged: {
      memory: answers.reduce((total, a) => total + a.purged.memory, 0),
      redis: redis.every((r) => r === null) ? null : redis.reduce<number>((total, r) => total + (r ?? 0), 0),
    },
    matched: combineMatched(answers.map((a) => a.matched)),
    coalesced: answers.some((a) => a.coalesced),
  };
}

const workerName = (w: WorkerRef): string => (w.pid === undefined ? `worker ${w.id}` : `worker ${w.id} (pid ${w.pid})`);

/** A worker's error message (the admin API's shape) or, failing that, its body's start. */
function messageOf(answer: WorkerHttpAnswer): string {
  const text = answer.body.toString('utf8');
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string')
      return (parsed as { message: string }).message;
  } catch {
    // Not JSON: its text, cut.
  }
  return text.slice(0, 200);
}

const succeeded = (status: number): boolean => status >= 200 && status < 300;

/**
 * The body of one answer for the workers' successful answers (all with the same status), or
 * undefined when one of them is not what was expected (the first worker's body is passed on).
 */
export type SuccessCombiner = (answers: Array<WorkerRef & { body: Buffer }>) => Buffer | undefined;

/** A purge's answers, their counts added up (sumPurgeAnswers). */
export const combinePurgeBodies: SuccessCombiner = (answers) => {
  const purges = answers.map((a) => parsePurgeAnswer(a.body));
  return purges.every((p) => p !== undefined) ? Buffer.from(JSON.stringify(sumPurgeAnswers(purges as PurgeAnswer[]))) : undefined;
};

/**
 * `what` names the call (`POST /admin/purge`); `requestId` goes on an answer the primary writes
 * itself; `combineSuccesses` makes one body of the workers' successful answers (a purge's by default).
 */
export function combineAdminAnswers(
  what: string,
  workers: WorkerAnswer[],
  requestId: string,
  combineSuccesses: SuccessCombiner = combinePurgeBodies,
): CombinedAnswer {
  const statusOf = (w: WorkerAnswer): number => ('answer' in w ? w.answer.status : NO_ANSWER_STATUS);
  const first = workers[0];
  if (first && 'answer' in first && workers.every((w) => 'answer' in w && w.answer.status === first.answer.status)) {
    const answers = workers.map((w) => ({ id: w.id, pid: w.pid, body: (w as { answer: WorkerHttpAnswer }).answer.body }));
    const headers = Object.entries(first.answer.headers).flatMap(([name, value]) =>
      value === undefined || PER_MESSAGE_HEADERS.has(name) ? [] : (Array.isArray(value) ? value : [value]).flatMap((v) => [name, v]),
    );
    const body = (succeeded(first.answer.status) ? combineSuccesses(answers) : undefined) ?? first.answer.body;
    return { status: first.answer.status, headers: [...headers, 'content-length', String(body.length)], body };
  }
  // No worker ready: as the primary answers anything it cannot forward (primary.ts).
  const status = workers.length === 0 ? 503 : Math.max(...workers.map(statusOf));
  const failed = workers.filter((w) => !succeeded(statusOf(w)));
  const ok = workers.length - failed.length;
  // Every worker succeeded, with different statuses: say which gave what.
  const named = failed.length > 0 ? failed : workers;
  const details = named.map((w) =>
    'answer' in w ? `${workerName(w)} answered ${w.answer.status}: ${messageOf(w.answer)}` : `${workerName(w)} did not answer: ${w.error}`,
  );
  const message =
    workers.length === 0
      ? `${what}: no worker is ready`
      : `${what} succeeded on ${ok} of ${workers.length} workers; ${details.join('; ')}${ok > 0 && failed.length > 0 ? ' (the others carried it out: it may be sent again)' : ''}`;
  const body = Buffer.from(JSON.stringify({ statusCode: status, error: reasonOf(status), message }));
  return {
    status,
    headers: ['content-type', JSON_TYPE, 'content-length', String(body.length), 'cache-control', 'no-store', 'x-request-id', requestId],
    body,
  };
}
