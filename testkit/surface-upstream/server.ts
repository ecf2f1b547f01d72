/**
 * The surface upstream's HTTP server: holds the current snapshot and the recent ones (so the
 * answer at any recent moment can be recomputed), moves the chain (a block on a timer or when
 * told, background transactions), accepts broadcasts, answers everything else with the pure
 * `answer`, and counts every request it receives.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { answer, BROADCAST_PATH, type Reply, type SurfaceRequest } from './answers.js';
import { familyOf, type ChangeClass } from './families.js';
import { buildGenesis, type ChainCast, type ChainOptions } from './genesis.js';
import { acceptTransaction, decodeTransaction, mineBlock, mineBurnBlocks, type Snapshot } from './model.js';
import { Cl, signContractCall, signTransfer } from './signing.js';

export interface SurfaceUpstreamOptions extends ChainOptions {
  port?: number;
  /** A block every this many ms; 0: only when `mine()` is called. */
  blockEveryMs?: number;
  /** A background transaction every this many ms; 0: only when `backgroundTx()` is called. */
  backgroundTxEveryMs?: number;
  /** How long past snapshots are kept for `answerAt` (default 30 s). */
  historyMs?: number;
  /** Deprecated routes answer 410 Gone (ENABLE_DEPRECATED_ENDPOINTS=false). */
  deprecatedGone?: boolean;
  /** The clock (ms); tests may drive it. */
  now?: () => number;
}

export interface CountedRequest {
  at: number;
  method: string;
  url: string;
  family: string;
  cls: ChangeClass;
  status: number;
  /** Answered 304 to an If-None-Match. */
  notModified: boolean;
  conditional: boolean;
}

export interface RenderedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const API_VERSION = 'v9.0.2 (surface fake)';
const WARNING = '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';
const MUST_REVALIDATE = 'public, no-cache, must-revalidate';
const MAX_BODY = 1024 * 1024;

/** `parseIfNoneMatchHeader`: a comma list, W/ and quotes stripped, `*` not special. */
function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, '') === etag);
}

/** A reply with the upstream's headers (§1.4), and 304 when If-None-Match holds its ETag. */
export function render(reply: Reply, ifNoneMatch?: string): RenderedAnswer {
  const isValidation = reply.status === 400 && reply.body.includes('"code":"FST_ERR_VALIDATION"');
  const headers: Record<string, string> = {};
  if (!isValidation) headers['x-api-version'] = API_VERSION;
  if (reply.deprecated) headers.warning = WARNING;
  if (reply.etag !== undefined) {
    headers['cache-control'] = MUST_REVALIDATE;
    if (ifNoneMatchHolds(ifNoneMatch, reply.etag)) return { status: 304, headers, body: '' };
    headers.etag = `"${reply.etag}"`;
  } else if (!isValidation) headers['cache-control'] = 'no-store';
  if (reply.contentType) headers['content-type'] = reply.contentType;
  return { status: reply.status, headers, body: reply.body };
}

function splitRequest(method: string, url: string, body: Buffer | string = ''): SurfaceRequest {
  const q = url.indexOf('?');
  return { method, path: q < 0 ? url : url.slice(0, q), query: q < 0 ? '' : url.slice(q + 1), body: typeof body === 'string' ? Buffer.from(body) : body };
}

export class SurfaceUpstream {
  url = '';
  port = 0;
  readonly requests: CountedRequest[] = [];
  /** Oldest first; the last is current. */
  private history: Snapshot[] = [];
  private readonly server = createServer((req, res) => this.onRequest(req, res));
  private readonly sockets = new Set<Socket>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly now: () => number;
  private deprecatedGone: boolean;
  private botTurn = 0;
  private trimmed = false;

  private constructor(
    readonly cast: ChainCast,
    first: Snapshot,
    private readonly options: SurfaceUpstreamOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.deprecatedGone = options.deprecatedGone ?? false;
    this.history.push({ ...first, at: this.now() });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // The fake speaks no WebSocket: an upgrade is refused (the socket closed, as node:http does
    // with no upgrade listener) but counted, so the bench sees a proxy's upgrade attempts.
    this.server.on('upgrade', (req: IncomingMessage, socket) => {
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      this.requests.push({ at: this.now(), method, url, family: 'ws_upgrade', cls: 'other', status: 0, notModified: false, conditional: false });
      socket.on('error', () => undefined);
      socket.destroy();
    });
  }

  static async start(options: SurfaceUpstreamOptions = {}): Promise<SurfaceUpstream> {
    const blockSeconds = Math.max(1, Math.round((options.blockEveryMs || 4_000) / 1000));
    const { snapshot, cast } = await buildGenesis(options, Math.floor((options.now ?? Date.now)() / 1000), blockSeconds);
    const upstream = new SurfaceUpstream(cast, snapshot, options);
    await new Promise<void>((resolve, reject) => {
      upstream.server.once('error', reject);
      upstream.server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    upstream.port = (upstream.server.address() as AddressInfo).port;
    upstream.url = `http://127.0.0.1:${upstream.port}`;
    if (options.blockEveryMs) upstream.timers.push(setInterval(() => upstream.mine(), options.blockEveryMs).unref());
    if (options.backgroundTxEveryMs) {
      upstream.timers.push(setInterval(() => void upstream.backgroundTx().catch(() => undefined), options.backgroundTxEveryMs).unref());
    }
    return upstream;
  }

  current(): Snapshot {
    return this.history[this.history.length - 1] as Snapshot;
  }

  /** Mines a block now. */
  /** Mines the mempool into a new block (`lateInTenure`: in the tip's tenure although a newer burn block is announced; model.ts). */
  mine(options: { lateInTenure?: boolean } = {}): Snapshot {
    return this.install(mineBlock(this.current(), Math.floor(this.now() / 1000), options));
  }

  /**
   * Mines `count` (default 1) burn blocks now without a Stacks block: /extended's burn_block_height
   * moves, its chain_tip ETag does not, by_burn_block_height answers 404 for them; the next
   * mine() opens its tenure in the newest one.
   */
  mineBurn(count = 1): Snapshot {
    return this.install(mineBurnBlocks(this.current(), count, Math.floor(this.now() / 1000)));
  }

  setDeprecatedGone(on: boolean): void {
    this.deprecatedGone = on;
  }

  /** The rest of the world: a background sender pays a wallet, or calls a popular contract. */
  async backgroundTx(): Promise<string> {
    const { bots, wallets, deployer } = this.cast;
    const turn = this.botTurn++;
    const bot = bots[turn % bots.length]!;
    const s = this.current();
    const pending = s.mempool.filter((t) => t.sender === bot.address).map((t) => t.nonce);
    const nonce = pending.length ? Math.max(...pending) + 1 : (s.accounts.get(bot.address)?.nonce ?? 0);
    const target = wallets[(turn * 37) % wallets.length]!;
    const kind = turn % 4;
    const raw =
      kind === 0 || kind === 1
        ? await signTransfer(bot, target.address, 100n + BigInt(turn), nonce, 300n)
        : kind === 2
          ? await signContractCall(
              bot,
              `${deployer.address}.counter`,
              turn % 8 === 2 ? 'increment' : 'set-score',
              turn % 8 === 2 ? [] : [Cl.uint(BigInt(turn))],
              nonce,
              500n,
            )
          : await signContractCall(bot, `${deployer.address}.collectibles`, 'mint', [Cl.principal(target.address)], nonce, 500n);
    const result = this.broadcast(raw);
    if (result.status !== 200) throw new Error(`background tx rejected: ${result.body}`);
    return raw;
  }

  /** POST /v2/transactions: decode, admit into the mempool, answer as the node does. */
  broadcast(raw: string): RenderedAnswer {
    let tx;
    try {
      tx = decodeTransaction(raw, Math.floor(this.now() / 1000));
    } catch (e) {
      return render({
        status: 400,
        contentType: 'application/json',
        body: JSON.stringify({ error: 'transaction rejected', reason: 'Deserialization', reason_data: { message: String((e as Error).message) } }),
      });
    }
    const accepted = acceptTransaction(this.current(), tx);
    if (!accepted.ok) {
      return render({
        status: 400,
        contentType: 'application/json',
        body: JSON.stringify({ error: 'transaction rejected', reason: accepted.reason, reason_data: accepted.reasonData, txid: tx.txId.slice(2) }),
      });
    }
    if (!accepted.duplicate) this.install(accepted.snapshot);
    return render({ status: 200, contentType: 'application/json', body: JSON.stringify(tx.txId.slice(2)) });
  }

  /** The answer (without If-None-Match) the upstream gave, or would have given, at `time`. */
  answerAt(time: number, method: string, url: string, body: Buffer | string = ''): RenderedAnswer {
    return render(answer(this.snapshotAt(time), splitRequest(method, url, body), { deprecatedGone: this.deprecatedGone }));
  }

  /** Every distinct answer the upstream gave to this read at some moment in [from, to]. */
  *answersWithin(from: number, to: number, method: string, url: string, body: Buffer | string = ''): Generator<RenderedAnswer> {
    const request = splitRequest(method, url, body);
    const seen = new Set<string>();
    for (let i = this.history.length - 1; i >= 0; i--) {
      const s = this.history[i] as Snapshot;
      const until = this.history[i + 1]?.at ?? Number.POSITIVE_INFINITY;
      if (s.at > to && !(i === 0 && !this.trimmed)) continue;
      if (until < from) break;
      const rendered = render(answer(s, request, { deprecatedGone: this.deprecatedGone }));
      const key = `${rendered.status} ${rendered.body}`;
      if (seen.has(key)) continue;
      seen.add(key);
      yield rendered;
    }
  }

  /** From when answers can be recomputed: the genesis snapshot held since forever, until history is trimmed. */
  oldestKnown(): number {
    return this.trimmed ? (this.history[0] as Snapshot).at : Number.NEGATIVE_INFINITY;
  }

  snapshotAt(time: number): Snapshot {
    for (let i = this.history.length - 1; i >= 0; i--) if ((this.history[i] as Snapshot).at <= time) return this.history[i] as Snapshot;
    return this.history[0] as Snapshot;
  }

  count(filter?: (r: CountedRequest) => boolean): number {
    return filter ? this.requests.filter(filter).length : this.requests.length;
  }

  resetCounts(): void {
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private install(next: Snapshot): Snapshot {
    const now = this.now();
    const installed = { ...next, at: Math.max(now, this.current().at) };
    this.history.push(installed);
    const keepFrom = now - (this.options.historyMs ?? 30_000);
    // Keep the snapshot that was current at keepFrom, drop the older ones.
    while (this.history.length > 1 && (this.history[1] as Snapshot).at <= keepFrom) {
      this.history.shift();
      this.trimmed = true;
    }
    return installed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const inm = req.headers['if-none-match'];
      let out: RenderedAnswer;
      try {
        if (size > MAX_BODY) out = render({ status: 413, body: 'Payload Too Large', contentType: 'text/plain' });
        else if (method === 'POST' && url.split('?')[0] === BROADCAST_PATH) out = this.broadcast(rawTxOf(req.headers['content-type'], body));
        else
          out = render(
            answer(this.current(), splitRequest(method, url, body), { deprecatedGone: this.deprecatedGone }),
            typeof inm === 'string' ? inm : undefined,
          );
      } catch (e) {
        // A bug in the fake shows up as a 500 that names it, never as a crash of the test process.
        out = { status: 500, headers: { 'content-type': 'text/plain' }, body: `surface upstream: ${String(e)}` };
      }
      const family = familyOf(method, url);
      this.requests.push({
        at: this.now(),
        method,
        url,
        family: family.id,
        cls: family.cls,
        status: out.status,
        notModified: out.status === 304,
        conditional: inm !== undefined,
      });
      const headers = out.status === 304 ? out.headers : { ...out.headers, 'content-length': String(Buffer.byteLength(out.body)) };
      res.writeHead(out.status, headers).end(method === 'HEAD' || out.status === 304 ? undefined : out.body);
    });
  }
}

/** stacks.js posts `{"tx":"<hex>"}` as JSON; other clients post the raw bytes (octet-stream). */
function rawTxOf(contentType: string | undefined, body: Buffer): string {
  if (contentType?.includes('json')) {
    try {
      const parsed = JSON.parse(body.toString('utf8')) as { tx?: unknown };
      return typeof parsed.tx === 'string' ? parsed.tx : '';
    } catch {
      return '';
    }
  }
  return body.toString('hex');
}

export async function startSurfaceUpstream(options: SurfaceUpstreamOptions = {}): Promise<SurfaceUpstream> {
  return SurfaceUpstream.start(options);
}
