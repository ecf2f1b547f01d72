/** What the status report is built from (src/http/admin/status-report.ts), for unit tests: a quiet proxy at tip 10, with overrides. */
import type { StatusSources } from '../../src/http/admin/status-report.js';
import type { StatusCounts } from '../../src/telemetry/prometheus-telemetry.js';

export function statusCounts(over: Partial<StatusCounts> = {}): StatusCounts {
  return {
    requests: [],
    classes: [],
    upstreamRequests: 0,
    lastFailures: {},
    lastTipPollFailure: null,
    tipAgeSeconds: 1.5,
    pushFeedBelieved: {},
    wsClients: {},
    recentPurges: [],
    recentReorgs: [],
    reorgPurgedEntries: 0,
    reorgsTotal: 0,
    ...over,
  };
}

export function statusSources(over: Partial<StatusSources> = {}): StatusSources {
  return {
    now: 1_000_000,
    tip: { height: 10, indexBlockHash: '0xabc', burnHeight: 5 },
    chain: { reorgs: [], finalStacksHeight: 4, finalBurnHeight: 2 },
    upstreams: [{ origin: 'http://a', usable: true, breaker: 'closed', tipHeight: 10, lagBlocks: 0, inFlight: 1, queued: 0 }],
    counts: statusCounts(),
    rates: { requests: 3, upstreamRequests: 1 },
    rateWindowSeconds: 10,
    memory: { entries: 2, bytes: 300, maxBytes: 1000, maxEntryBytes: 100 },
    redis: undefined,
    purges: { local: 0, fromPeers: 0 },
    live: { push: true, fanout: true },
    pushModes: {},
    ...over,
  };
}
