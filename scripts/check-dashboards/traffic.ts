/** The traffic mix: one round of requests moves every metric the dashboards show. */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { makeSTXTokenTransfer, privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import type { ProxyServer } from '../../src/composition-root.js';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { ADMIN_TOKEN, MAX_ATTEMPTS, MEMPOOL_TTL_MS, STALE_WHILE_REVALIDATE_MS } from './proxies.js';

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;

/** One request per route id (the examples of test/integration/read-routes.test.ts). */
const ROUTE_PATHS = [
  `/extended/v1/address/${P}/stx`,
  '/extended/v2/mempool/fees',
  `/extended/v1/address/${P}/balances`,
  `/extended/v1/tx/${TX}`,
  '/extended/v2/blocks/latest',
  `/extended/v1/tx/multiple?tx_id=${TX}&tx_id=${RECORDED.unknownTxId}`,
  '/extended/v1/tx/mempool/stats',
  `/extended/v1/tx/events?address=${P}&limit=5`,
  `/extended/v1/contract/${RECORDED.contractId}/events?limit=5`,
  `/extended/v1/address/${P}/transactions`,
  `/extended/v2/addresses/${P}/transactions?limit=5`,
  `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
  '/extended/v1/address/ST000000000000000000002AMW42H/0x66146a2549bb199c4960d58af1a9ed3022904896976cfa14bb05b4b5d3844d80/with_transfers',
];
/**
 * A page of P's history that only confirmSiblings() asks for: once a block has passed without P,
 * the first page's revalidation (everyRouteTwice) confirms it without an upstream request.
 */
const SIBLING_PAGE = `/extended/v1/address/${P}/transactions?limit=5&offset=5`;
/** Refused by validation (400) without an upstream request. */
const INVALID_PATHS = ['/extended/v1/tx/0x1234', '/extended/v2/blocks/not-a-block'];
/** In no route family: forwarded unchanged (route="passthrough", cache="BYPASS"). */
const PASSTHROUGH_PATHS = ['/v2/neighbors', `/extended/v1/faucets/btc/${P}`];
/**
 * Route families of the wider read surface the fake upstream answers (status, mempool, blocks),
 * twice each: a miss or revalidation (the tip moved), then a hit (stacks_proxy_surface_requests_total).
 */
const SURFACE_PATHS = ['/extended', '/extended/v1/tx/mempool?limit=5', '/extended/v2/blocks/average-times'];
/** Final blocks: filler that overflows the small memory tier, so it evicts. */
const FINAL_BLOCK_PATHS = Array.from({ length: 40 }, (_, i) => `/extended/v2/blocks/${i + 1}`);
/** Mempool-class entries whose upstream ETag stays (a pending tx), moves with the mempool (fees), or fails (stats). */
const UNCHANGED_PATH = `/extended/v1/tx/${RECORDED.pendingTxId}`;
const CHANGING_PATH = '/extended/v2/mempool/fees';
const FAILING_PATH = '/extended/v1/tx/mempool/stats';
const SINGLE_FLIGHT_CALLERS = 5;
/** Long enough that concurrent callers arrive while the first one's upstream request is in flight. */
const SLOW_UPSTREAM_MS = 150;
/** The first instance must hold the Redis lock before its peer asks for the same key. */
const LOCK_HEAD_START_MS = 40;
/** More concurrent misses than the peer's one in flight plus one queued. */
const OVERLOAD_BURST = 5;

type Failure = { status: number } | 'reset';

/** Who broadcasts (principal activity: stacks_proxy_broadcasts_observed_total and the announcements). */
const BROADCAST_KEY = randomPrivateKey();
const BROADCAST_RECIPIENT = privateKeyToAddress(randomPrivateKey(), 'testnet');

/** A JSON-RPC subscribe of the upstream's /extended/v1/ws channel. */
const SUBSCRIBE_BLOCK = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { event: 'block' } });
/** More messages than the main instance lets a client send in its burst (live.fanout in proxies.ts): it is closed (rate). */
const OVER_RATE_MESSAGES = 15;

export class TrafficMix {
  private rounds = 0;
  /** Fan-out clients that stay connected through the run (the clients and subscriptions gauges). */
  private readonly watchers: WebSocket[] = [];

  constructor(
    private readonly main: ProxyServer,
    private readonly peer: ProxyServer,
    private readonly upstream: FakeUpstream,
    private readonly worker: ProxyServer,
  ) {}

  async round(): Promise<void> {
    this.rounds += 1;
    await this.everyRouteTwice();
    await this.get(this.main, ...INVALID_PATHS, ...PASSTHROUGH_PATHS, ...FINAL_BLOCK_PATHS);
    await this.get(this.main, ...SURFACE_PATHS, ...SURFACE_PATHS);
    await this.concurrentMisses();
    await this.missesAcrossInstances();
    await this.missesThroughPrimary();
    await this.overloadPeer();
    await this.upstreamFailures();
    await this.disagreeingAnswer();
    await this.expireMempoolEntries();
    await this.confirmSiblings();
    await this.purgeThroughAdmin();
    await this.broadcast();
    await this.fanOutClients();
    await this.moveChain();
  }

  /** Closes the fan-out clients still connected. */
  close(): void {
    for (const socket of this.watchers.splice(0)) socket.terminate();
  }

  /**
   * The WebSocket fan-out: two clients watch blocks on the main instance for the whole run (the
   * notifications of moveChain go out to them), and each round one client sends faster than its
   * message rate allows and is closed (a drop).
   */
  private async fanOutClients(): Promise<void> {
    while (this.watchers.length < 2) {
      const socket = await this.openFanOutClient();
      socket.send(SUBSCRIBE_BLOCK);
      this.watchers.push(socket);
    }
    const hasty = await this.openFanOutClient();
    const closed = new Promise<void>((resolve) => hasty.once('close', () => resolve()));
    for (let i = 0; i < OVER_RATE_MESSAGES && hasty.readyState === WebSocket.OPEN; i += 1) hasty.send(SUBSCRIBE_BLOCK);
    await Promise.race([closed, sleep(2_000)]);
    hasty.terminate();
  }

  private openFanOutClient(): Promise<WebSocket> {
    const socket = new WebSocket(`${this.main.url.replace(/^http/, 'ws')}/extended/v1/ws`);
    socket.on('error', () => socket.terminate());
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(socket));
      socket.once('close', () => reject(new Error('a fan-out client could not connect to the main instance')));
    });
  }

  /** Each route's first request of a round misses or revalidates (the tip moved), the second hits. */
  private async everyRouteTwice(): Promise<void> {
    await Promise.all(ROUTE_PATHS.map(async (path) => this.get(this.main, path, path)));
  }

  /** Identical misses at once on one instance: one upstream request, the others join it. */
  private async concurrentMisses(): Promise<void> {
    const path = `/extended/v1/tx/${unknownTxId()}`;
    await this.withSlowUpstream(path, () => Promise.all(Array.from({ length: SINGLE_FLIGHT_CALLERS }, () => this.get(this.main, path))));
  }

  /** The same miss on both instances: the peer waits on the Redis lock and gets the answer through Redis. */
  private async missesAcrossInstances(): Promise<void> {
    const path = `/extended/v1/tx/${unknownTxId()}`;
    await this.withSlowUpstream(path, async () => {
      const first = this.get(this.main, path);
      await sleep(LOCK_HEAD_START_MS);
      await Promise.all([first, this.get(this.peer, path)]);
    });
  }

  /** Misses on the worker-like instance: each asks its primary first (the primary single-flight panel). */
  private async missesThroughPrimary(): Promise<void> {
    const path = `/extended/v1/tx/${unknownTxId()}`;
    await Promise.all([this.get(this.worker, path), this.get(this.worker, path)]);
  }

  /** Distinct misses at once on the peer: its upstream queue overflows and the rest get 503. */
  private async overloadPeer(): Promise<void> {
    const paths = Array.from({ length: OVERLOAD_BURST }, () => `/extended/v1/tx/${unknownTxId()}`);
    await this.withSlowUpstream(paths, () => Promise.all(paths.map((path) => this.get(this.peer, path))));
  }

  /** A 503 and a reset, through every retry, on keys not cached: the client gets the 503 and a 502. */
  private async upstreamFailures(): Promise<void> {
    await this.getFailing(`/extended/v1/tx/${unknownTxId()}`, { status: 503 });
    await this.getFailing(`/extended/v1/tx/${unknownTxId()}`, 'reset');
  }

  /**
   * A transaction answered once as mined in block 999,999,999 (above every tip): it does not fit
   * the chain the proxy verified, so it is served as sent, unstored, and counted
   * (chain_disagreements_total). A new event_limit each round: a key not cached yet.
   */
  private async disagreeingAnswer(): Promise<void> {
    const path = `/extended/v1/tx/${TX}?event_limit=${(this.rounds % 90) + 1}`;
    const tx = JSON.parse(await (await fetch(this.upstream.url + path, { signal: AbortSignal.timeout(10_000) })).text()) as Record<string, unknown>;
    this.upstream.failNext(1, { status: 200, body: JSON.stringify({ ...tx, block_height: 999_999_999 }) }, literally(path));
    await this.get(this.main, path);
  }

  /**
   * Just past the mempool TTL entries are served stale while they refresh; past the
   * stale-while-revalidate window too they are revalidated: an unchanged ETag as not_modified,
   * a moved one as modified, and a failing upstream makes the proxy serve the old copy.
   */
  private async expireMempoolEntries(): Promise<void> {
    const paths = [UNCHANGED_PATH, CHANGING_PATH, FAILING_PATH];
    await this.get(this.main, ...paths);
    await sleep(MEMPOOL_TTL_MS + 50);
    await this.get(this.main, ...paths);
    await sleep(MEMPOOL_TTL_MS + STALE_WHILE_REVALIDATE_MS + 50);
    this.upstream.setMempoolChanged();
    await this.get(this.main, UNCHANGED_PATH, CHANGING_PATH);
    await this.getFailing(FAILING_PATH, { status: 503 });
    await this.getFailing(FAILING_PATH, 'reset');
  }

  /** After a block without P: HIT by the first page's ETag (etag_scope_confirmations); else a miss that stores it. */
  private async confirmSiblings(): Promise<void> {
    await this.get(this.main, SIBLING_PAGE);
  }

  /**
   * Purges asked of the main instance (origin admin), heard by the peer through Redis (origin
   * peer): three at once, so that those arriving while the first runs share one purge (coalesced).
   */
  private async purgeThroughAdmin(): Promise<void> {
    const purge = async (): Promise<void> => {
      const response = await fetch(`${this.main.adminUrl}/admin/purge`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tx_id: TX }),
        signal: AbortSignal.timeout(10_000),
      });
      if (response.status !== 200) throw new Error(`admin purge answered ${response.status}: ${await response.text()}`);
    };
    await Promise.all([purge(), purge(), purge()]);
  }

  /** A signed transfer broadcast through the main instance: decoded, and its touch announced to the peer over Redis. */
  private async broadcast(): Promise<void> {
    const tx = await makeSTXTokenTransfer({
      recipient: BROADCAST_RECIPIENT,
      amount: 1n,
      senderKey: BROADCAST_KEY,
      network: 'testnet',
      fee: 200n,
      nonce: BigInt(this.rounds),
    });
    const response = await fetch(`${this.main.url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tx: tx.serialize() }),
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer();
  }

  /**
   * A new block every round; every other round a reorg instead, after which the tip entries the
   * next round reads were validated on the old branch and are purged. The main instance follows
   * the upstream's push feed: every third block goes unannounced (the feed is then distrusted),
   * and every fifth round the upstream drops its WebSocket (it reconnects).
   */
  private async moveChain(): Promise<void> {
    const unannounced = this.rounds % 3 === 0;
    if (unannounced) this.upstream.rpc.setPublishing(false);
    if (this.rounds % 2 === 0) this.upstream.reorg(1);
    else this.upstream.advanceTip(1);
    await Promise.all([this.main.tracker.pollOnce(), this.peer.tracker.pollOnce()]);
    if (unannounced) this.upstream.rpc.setPublishing(true);
    if (this.rounds % 5 === 0) this.upstream.rpc.dropAll();
  }

  private async withSlowUpstream<T>(paths: string | string[], run: () => Promise<T>): Promise<void> {
    this.upstream.setDelay(SLOW_UPSTREAM_MS, literally(...[paths].flat()));
    try {
      await run();
    } finally {
      this.upstream.setDelay(0);
    }
  }

  private async getFailing(path: string, how: Failure): Promise<void> {
    this.upstream.failNext(MAX_ATTEMPTS, how, literally(path));
    await this.get(this.main, path);
  }

  /** Requests run one after another; any transport failure toward the proxy is a failed check. */
  private async get(proxy: ProxyServer, ...paths: string[]): Promise<void> {
    for (const path of paths) {
      const response = await fetch(proxy.url + path, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
      await response.arrayBuffer();
    }
  }
}

/** A pattern matching any of these paths (the fake upstream tests it against the request url). */
function literally(...paths: string[]): RegExp {
  return new RegExp(paths.map((path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));
}

function unknownTxId(): string {
  return `0x${randomBytes(32).toString('hex')}`;
}

/** Runs rounds back to back until stopped; the first error stops it and is kept for the report. */
export function startTraffic(mix: TrafficMix): { stop(): Promise<void>; error(): unknown } {
  let stopped = false;
  let failure: unknown;
  const loop = (async () => {
    while (!stopped) {
      try {
        await mix.round();
      } catch (error) {
        failure = error;
        return;
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      mix.close();
    },
    error: () => failure,
  };
}
