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
