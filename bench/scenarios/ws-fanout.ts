/**
 * WebSocket fan-out (issue 16, live.fanout) against today's tunnels, side by side: BLOCK_CLIENTS
 * `ws` clients subscribed to `block` and ADDRESS_CLIENTS clients each subscribed to an
 * `address_tx_update` of its own address, through one proxy's /extended/v1/ws (JSON-RPC, as
 * they speak to the upstream), each proxy in front of its own fake upstream with the upstream's
 * JSON-RPC channel. The fake then publishes NOTIFICATIONS blocks and, with each, one
 * notification for every watched address. Figures: the upstream WebSocket connections the fake
 * counts (open, and opened in all), the delivery latency from the fake's send to each client's
 * receipt (p50, p99, max; clients and fake share this process's clock), and whether every client
 * got every notification meant for it. Proxies run in this process: what is measured is
 * connections and delivery, the event loop shared alike by both variants.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { startFakeUpstream, testConfig, waitFor, type FakeUpstream } from '../../testkit/index.js';
import { deriveWallets } from '../../testkit/surface-upstream/wallets.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const BLOCK_CLIENTS = 200;
const ADDRESS_CLIENTS = 50;
/** Pause between two rounds of notifications (a block and its address updates). */
const ROUND_MS = 200;

interface Client {
  ws: WebSocket;
  /** Notification sequence numbers received. */
  got: Set<number>;
}

interface Figures {
  upstreamConnections: number;
  upstreamConnectionsOpened: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  delivered: number;
  expected: number;
  everyClientGotEverything: boolean;
  clientsClosed: number;
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
};
const round2 = (n: number): number => Math.round(n * 100) / 100;

/** Opens a client and subscribes it; resolves once the proxy (or the upstream through it) replied. */
async function subscribed(
  url: string,
  params: Record<string, unknown>,
  sentAt: Map<number, number>,
  latencies: number[],
  closed: { count: number },
): Promise<Client> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/extended/v1/ws`);
  const client: Client = { ws, got: new Set() };
  let replied: () => void = () => undefined;
  const reply = new Promise<void>((resolve) => (replied = resolve));
  ws.on('message', (data) => {
    const at = performance.now();
    const message = JSON.parse(data.toString()) as { id?: unknown; method?: string; params?: { bench_seq?: number } };
    if (message.id !== undefined) return replied();
    const seq = message.params?.bench_seq;
    if (typeof seq !== 'number') return;
    const sent = sentAt.get(seq);
    if (sent !== undefined) latencies.push(at - sent);
    client.got.add(seq);
  });
  ws.on('close', () => (closed.count += 1));
  ws.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params }));
  await reply;
  return client;
}

async function runVariant(fanout: boolean, rounds: number): Promise<Figures> {
  const upstream: FakeUpstream = await startFakeUpstream({ rpcChannel: true });
  let proxy: ProxyServer | undefined;
  const clients: Client[] = [];
  try {
    const config = testConfig({ upstreamUrls: [upstream.url], overrides: { live: { fanout: { enabled: fanout } } } });
    proxy = await startProxy(config, { logger: createLogger('warn'), defaultMetrics: false });
    const url = proxy.url;
    const sentAt = new Map<number, number>();
    const latencies: number[] = [];
    const closed = { count: 0 };
    const addresses = deriveWallets('ws-fanout-bench', 'watched', ADDRESS_CLIENTS).map((wallet) => wallet.address);
    // Connected in batches: a burst of 250 handshakes at once is not what is measured.
    for (let i = 0; i < BLOCK_CLIENTS; i += 25) {
      clients.push(
        ...(await Promise.all(Array.from({ length: Math.min(25, BLOCK_CLIENTS - i) }, () => subscribed(url, { event: 'block' }, sentAt, latencies, closed)))),
      );
    }
    const addressClients = await Promise.all(addresses.map((address) => subscribed(url, { event: 'address_tx_update', address }, sentAt, latencies, closed)));
    clients.push(...addressClients);
    await waitFor(async () => upstream.rpc.subscribers('block') > 0, { timeoutMs: 10_000, what: 'the block subscription upstream' });

    let seq = 0;
    const blockSeqs: number[] = [];
    const addressSeqs = new Map<string, number[]>(addresses.map((a) => [a, []]));
    for (let round = 0; round < rounds; round++) {
      const blockSeq = seq++;
      blockSeqs.push(blockSeq);
      sentAt.set(blockSeq, performance.now());
      upstream.rpc.publish('block', { bench_seq: blockSeq, height: 1_000_000 + round, hash: `0x${blockSeq.toString(16).padStart(64, '0')}` });
      for (const address of addresses) {
        const addressSeq = seq++;
        addressSeqs.get(address)?.push(addressSeq);
        sentAt.set(addressSeq, performance.now());
        upstream.rpc.publish('address_tx_update', {
          bench_seq: addressSeq,
          address,
          tx_id: `0x${addressSeq.toString(16).padStart(64, '0')}`,
          tx_status: 'success',
        });
      }
      await sleep(ROUND_MS);
    }
    const expected = BLOCK_CLIENTS * blockSeqs.length + ADDRESS_CLIENTS * rounds;
    const delivered = () => clients.reduce((sum, client) => sum + client.got.size, 0);
    await waitFor(async () => delivered() >= expected, { timeoutMs: 5_000, what: 'every notification delivered' }).catch(() => undefined);
    const blockClientsComplete = clients.slice(0, BLOCK_CLIENTS).every((client) => blockSeqs.every((s) => client.got.has(s)));
    const addressClientsComplete = addressClients.every(
      (client, i) => (addressSeqs.get(addresses[i] as string) ?? []).every((s) => client.got.has(s)) && client.got.size === rounds,
    );
    return {
      upstreamConnections: upstream.rpc.connections,
      upstreamConnectionsOpened: upstream.rpc.connectionsOpened,
      p50Ms: round2(percentile(latencies, 50)),
      p99Ms: round2(percentile(latencies, 99)),
      maxMs: round2(Math.max(0, ...latencies)),
      delivered: delivered(),
      expected,
      everyClientGotEverything: blockClientsComplete && addressClientsComplete,
      clientsClosed: closed.count,
    };
  } finally {
    for (const client of clients) client.ws.terminate();
    await proxy?.close();
    await upstream.close();
  }
}

export async function wsFanout({ options }: Context): Promise<Section> {
  const rounds = options.quick ? 5 : 20;
  // Alternating variants, the median round of each kept by its p50 (options.rounds runs each).
  const runs: { on: Figures[]; off: Figures[] } = { on: [], off: [] };
  for (let r = 0; r < options.rounds; r++) {
    runs.on.push(await runVariant(true, rounds));
    runs.off.push(await runVariant(false, rounds));
  }
  const medianRun = (list: Figures[]): Figures => [...list].sort((a, b) => a.p50Ms - b.p50Ms)[Math.floor(list.length / 2)] as Figures;
  const on = medianRun(runs.on);
  const off = medianRun(runs.off);
  const s = `ws fan-out, ${BLOCK_CLIENTS} block + ${ADDRESS_CLIENTS} address_tx_update clients, ${rounds} rounds`;
  const note = (f: Figures) =>
    `upstream WebSockets ${f.upstreamConnections} open (${f.upstreamConnectionsOpened} opened); delivery p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms, max ${f.maxMs} ms; ` +
    `${f.delivered}/${f.expected} delivered, every client everything: ${f.everyClientGotEverything ? 'yes' : 'no'}; clients closed ${f.clientsClosed}`;
  return {
    id: 'wsFanout',
    rows: [
      { scenario: s, name: 'live.fanout.enabled: false (a tunnel per client, before issue 16)', note: note(off) },
      { scenario: s, name: 'live.fanout.enabled: true (one upstream link)', note: note(on) },
    ],
    findings: [
      `Upstream WebSocket connections for ${BLOCK_CLIENTS + ADDRESS_CLIENTS} clients: ${off.upstreamConnections} with tunnels, ${on.upstreamConnections} with the fan-out (goal: at most 2).`,
      `Delivery from the upstream's send to each client: p50 ${off.p50Ms} → ${on.p50Ms} ms, p99 ${off.p99Ms} → ${on.p99Ms} ms, max ${off.maxMs} → ${on.maxMs} ms (goal: every notification within a second); every client got every notification: ${off.everyClientGotEverything ? 'yes' : 'no'} → ${on.everyClientGotEverything ? 'yes' : 'no'}.`,
    ],
    data: { on, off, rounds, blockClients: BLOCK_CLIENTS, addressClients: ADDRESS_CLIENTS },
  };
}
