/**
 * One fuzz lane: a fake upstream, the real proxy in-process in front of it, and a raw client.
 * A lane runs one case at a time, so every request the fake upstream logs during a case
 * belongs to that case; `npm run fuzz` runs a few lanes side by side for throughput.
 */
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { startFakeUpstream, type FakeUpstream } from '../fake-upstream/index.js';
import { testConfig } from '../proxy-config.js';
import type { FuzzRequest } from './arbitraries.js';
import { createRawClient, type RawOutcome } from './raw-client.js';

/** The proxy closes a request after this long; the fuzz properties allow it a second more to arrive. */
export const FUZZ_REQUEST_TIMEOUT_MS = 10_000;
const ANSWER_MARGIN_MS = 1_000;

export interface UpstreamExchange {
  method: string;
  url: string;
  /** What the fake upstream answers when asked again for the same url (only looked up after a 5xx). */
  status?: number;
}

export interface CaseReport {
  request: FuzzRequest;
  outcome: RawOutcome;
  /** Every request the fake upstream received while the case ran. */
  upstream: UpstreamExchange[];
}

export interface FuzzLane {
  proxyUrl: string;
  run(request: FuzzRequest): Promise<CaseReport>;
  close(): Promise<void>;
}

/** Small caches (no run should need hundreds of MiB), and limits well inside the client's patience. */
const FUZZ_OVERRIDES = {
  server: { requestTimeoutMs: FUZZ_REQUEST_TIMEOUT_MS },
  upstream: { requestDeadlineMs: FUZZ_REQUEST_TIMEOUT_MS / 2 },
  cache: { memory: { maxBytes: 8 * 1024 * 1024 } },
};

/** The real proxy in-process in front of `upstream`; the upstream is closed when the proxy cannot start. */
export async function startLaneProxy(upstream: { url: string; close(): Promise<void> }, overrides: Record<string, unknown>): Promise<ProxyServer> {
  const config = testConfig({ upstreamUrls: [upstream.url], overrides });
  try {
    return await startProxy(config, { logger: createLogger(config.logLevel), defaultMetrics: false });
  } catch (error) {
    await upstream.close();
    throw error;
  }
}

export async function startFuzzLane(): Promise<FuzzLane> {
  const upstream: FakeUpstream = await startFakeUpstream();
  const proxy = await startLaneProxy(upstream, FUZZ_OVERRIDES);
  const toProxy = createRawClient(1);
  const toUpstream = createRawClient(1);

  const run = async (request: FuzzRequest): Promise<CaseReport> => {
    upstream.resetCounts();
    const outcome = await toProxy.send(proxy.url, request.method, request.target, FUZZ_REQUEST_TIMEOUT_MS + ANSWER_MARGIN_MS);
    const exchanges: UpstreamExchange[] = upstream.requests.map(({ method, url }) => ({ method, url }));
    // A 5xx is the upstream's own answer only if the upstream gives it: ask it again (it is deterministic).
    if (outcome.kind === 'answer' && outcome.answer.status >= 500) {
      for (const exchange of exchanges) {
        if (exchange.method !== 'GET' && exchange.method !== 'HEAD') continue;
        const again = await toUpstream.send(upstream.url, exchange.method, exchange.url, FUZZ_REQUEST_TIMEOUT_MS);
        if (again.kind === 'answer') exchange.status = again.answer.status;
      }
    }
    return { request, outcome, upstream: exchanges };
  };

  const close = async () => {
    toProxy.close();
    toUpstream.close();
    await proxy.close();
    await upstream.close();
  };
  return { proxyUrl: proxy.url, run, close };
}
