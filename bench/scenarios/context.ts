/** What every scenario gets: the run's options, the fake upstream, and the hit body it serves. */
import type { FakeUpstream } from '../../testkit/index.js';
import { RECORDED } from '../../testkit/index.js';
import type { BenchOptions } from '../lib/load.js';

/** The cached answer hit scenarios ask for: a confirmed transaction (about 2.4 KB). */
export const HIT_PATH = `/extended/v1/tx/${RECORDED.confirmedTxId}`;

export interface Context {
  options: BenchOptions;
  upstream: FakeUpstream;
  /** The bytes of HIT_PATH as the upstream answers them. */
  hitBody: Buffer;
}

/** A config turning rate limiting on with limits no benchmark run can reach. */
export const RATE_LIMITED = { rateLimit: { enabled: true, windowMs: 60_000, anonymous: { limit: 1_000_000_000 }, keyed: { limit: 1_000_000_000 } } };

/** The head of one of the proxy's hits, as [name, value] pairs, without what node:http adds itself. */
export async function hitHead(url: string): Promise<Array<[string, string]>> {
  const response = await fetch(url);
  await response.arrayBuffer();
  const added = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
  return [...response.headers].filter(([name]) => !added.has(name));
}
