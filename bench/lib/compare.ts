/**
 * Figures derived from two runs of the same scenario: what a server adds to the latency of the
 * upstream called directly, its CPU next to another server's, and how busy its core was.
 */
import type { Run } from './load.js';

/**
 * A fixed offered rate that saturates nothing here (the proxy, the fake upstream, the load
 * generator): 400 req/s over 10 connections. With the upstream answering in 20 ms, each
 * connection's 40 requests of a second take most of the second, so requests go out steadily.
 */
export const UNSATURATED = { rate: 400, connections: 10 } as const;

const round2 = (value: number): number => Math.round(value * 100) / 100;

/** Milliseconds `run` adds over `direct` at p50. */
export const addedP50 = (run: Run | undefined, direct: Run | undefined): number => round2((run?.p50Ms ?? 0) - (direct?.p50Ms ?? 0));
/** Milliseconds `run` adds over `direct` at p99. */
export const addedP99 = (run: Run | undefined, direct: Run | undefined): number => round2((run?.p99Ms ?? 0) - (direct?.p99Ms ?? 0));

/** `run`'s CPU per request as a multiple of `base`'s ("1.50x"), or "?" without both. */
export const cpuRatio = (run: Run | undefined, base: Run | undefined): string =>
  run?.cpuMicrosPerRequest && base?.cpuMicrosPerRequest ? `${(run.cpuMicrosPerRequest / base.cpuMicrosPerRequest).toFixed(2)}x` : '?';

/** How much of one core the server spent (req/s x CPU per request). */
export const busyShare = (run: Run | undefined): string =>
  run?.cpuMicrosPerRequest ? `${Math.round((run.requestsPerSecond * run.cpuMicrosPerRequest) / 1e4)}%` : '?';

/** A signed duration: "+1.08 ms". */
export const ms = (value: number): string => `${value >= 0 ? '+' : ''}${value.toFixed(2)} ms`;
