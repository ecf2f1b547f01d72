/**
 * The admin port's /ready in worker mode: the host is ready only when every worker that takes
 * connections is. The primary hands each new connection to the next worker in turn, so one
 * worker that cannot serve (no tip yet, every upstream's breaker open for it, shutting down)
 * fails its share of the host's clients; a load balancer should hear that. The answer keeps the
 * single process's shape (readiness.ts, own-endpoints.ts) and adds `workers`. Pure.
 */
import type { WorkerAnswer } from './combine-admin-answers.js';
import type { WorkerRef } from './combine-status-reports.js';

interface ReadyBody {
  status: string;
  ready: boolean;
  reason?: string;
  details?: Record<string, unknown>;
}

export interface WorkerReadiness extends WorkerRef {
  ready: boolean;
  reason: string | null;
}

export type CombinedReadiness = ReadyBody & { workers: WorkerReadiness[] };

function parseReady(body: Buffer): ReadyBody | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    if (value === null || typeof value !== 'object' || typeof (value as ReadyBody).ready !== 'boolean') return undefined;
    return value as ReadyBody;
  } catch {
    return undefined;
  }
}

function readinessOf(worker: WorkerAnswer): { ref: WorkerReadiness; body?: ReadyBody } {
  const ref = { id: worker.id, pid: worker.pid };
  if ('error' in worker) return { ref: { ...ref, ready: false, reason: `did not answer: ${worker.error}` } };
  const body = parseReady(worker.answer.body);
  if (!body) return { ref: { ...ref, ready: false, reason: `answered ${worker.answer.status} without a readiness` } };
  const ready = body.ready && worker.answer.status === 200;
  return { ref: { ...ref, ready, reason: ready ? null : (body.reason ?? `answered ${worker.answer.status}`) }, body };
}

export function combineReadiness(workers: WorkerAnswer[]): { status: number; body: CombinedReadiness } {
  const judged = workers.map(readinessOf);
  const list = judged.map((j) => j.ref);
  if (judged.length === 0) return { status: 503, body: { status: 'not_ready', ready: false, reason: 'no worker is ready', workers: list } };
  const notReady = judged.filter((j) => !j.ref.ready);
  if (notReady.length === 0) return { status: 200, body: { ...(judged[0]?.body as ReadyBody), workers: list } };
  const reason = notReady.map((j) => `worker ${j.ref.id}${j.ref.pid === undefined ? '' : ` (pid ${j.ref.pid})`}: ${j.ref.reason}`).join('; ');
  // The details of the first worker that is not ready (its upstreams' last errors), as a single process shows its own.
  const details = notReady.find((j) => j.body?.details)?.body?.details;
  return {
    status: 503,
    body: {
      status: 'not_ready',
      ready: false,
      reason: `${notReady.length} of ${judged.length} workers not ready: ${reason}`,
      ...(details ? { details } : {}),
      workers: list,
    },
  };
}
