/**
 * The fake's HTTP server: listens, logs every request, applies injected faults, hands the rest to
 * dispatch, serves the upstream's JSON-RPC channel when asked to (and echoes other WebSockets),
 * and closes everything it opened.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { splitUrl } from '../fixtures.js';
import { FakeRpcChannel } from '../live-upstream/ws-rpc-channel.js';
import { legacyBlockJson } from './bodies.js';
import { FakeChain, type ChainEvent, type PrincipalEtags, type Tenure } from './chain.js';
import { dispatch } from './dispatch.js';
import { fail, FaultPlan, isWrongResource, matches, refuseUpgrade } from './faults.js';
import { Hold, type HeldAnswers } from './holds.js';
import { crashed, send } from './respond.js';
import type { AttachedChannel, FailureMode, FakeUpstream, RecordedRequest } from './types.js';

/** Upgrade paths of the upstream's JSON-RPC WebSocket and Socket.IO servers (§6). */
const WS_PATH_PREFIXES = ['/extended/v1/ws', '/socket.io'];

export class FakeUpstreamServer implements FakeUpstream {
  url = '';
  port = 0;
  readonly requests: RecordedRequest[] = [];
  private readonly chain: FakeChain;
  private readonly faults = new FaultPlan();
  private readonly server = createServer((req, res) => this.onRequest(req, res));
  private readonly wss = new WebSocketServer({ noServer: true });
  /** Every connection, so that close() can end keep-alive, upgraded and hanging ones. */
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private inFlight = 0;
  /** Channels attached on their own paths (testkit/live-upstream), tried before the echo. */
  private readonly channels = new Set<AttachedChannel>();
  /** Answers held until the test releases them (hold). */
  private readonly holds = new Set<Hold>();
  peakInFlight = 0;
  /** The upstream's JSON-RPC channel on /extended/v1/ws, when started with `rpcChannel: true`. */
  private readonly rpcChannel: FakeRpcChannel | undefined;

  constructor(principalEtags?: PrincipalEtags, rpcChannel = false) {
    this.chain = new FakeChain(principalEtags);
    if (rpcChannel) {
      const channel = new FakeRpcChannel();
      this.rpcChannel = channel;
      this.chain.onEvent((event) => pushChainEvent(channel, event));
    }
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  count(match?: string | RegExp | ((r: RecordedRequest) => boolean)): number {
    if (match === undefined) return this.requests.length;
    return this.requests.filter(requestTest(match)).length;
  }

  hold(match: string | RegExp | ((r: RecordedRequest) => boolean)): HeldAnswers {
    const hold = new Hold(requestTest(match), (released) => this.holds.delete(released));
    this.holds.add(hold);
    return hold;
  }

  resetCounts(): void {
    this.requests.length = 0; // in place: callers may hold the array
    this.peakInFlight = this.inFlight;
  }

  get openWebSockets(): number {
    return this.wss.clients.size + (this.rpcChannel?.connections ?? 0);
  }

  get rpc(): FakeRpcChannel {
    if (!this.rpcChannel) throw new Error('the fake upstream has no JSON-RPC channel: start it with { rpcChannel: true }');
    return this.rpcChannel;
  }

  tip() {
    const block = this.chain.tipBlock();
    return {
      height: block.height,
      index_block_hash: block.index_block_hash,
      block_hash: block.hash,
      burn_block_height: block.burn_block_height,
      burn_tip_height: this.chain.burnTipHeight(),
    };
  }

  advanceTip(blocks = 1, options: { tenure?: Tenure } = {}): void {
    this.chain.advance(blocks, options.tenure);
  }

  advanceBurn(blocks = 1): void {
    this.chain.advanceBurn(blocks);
  }

  mineOrphan(): { height: number; index_block_hash: string; burn_block_height: number } {
    const { height, index_block_hash, burn_block_height } = this.chain.mineOrphan();
    return { height, index_block_hash, burn_block_height };
  }

  jumpTip(blocks: number): void {
    this.chain.jumpTip(blocks);
  }

  reorg(depth: number): void {
    this.chain.reorg(depth);
  }

  addPendingTx(txId?: string): string {
    return this.chain.addPending(txId);
  }

  confirmTx(txId: string): void {
    this.chain.confirm(txId);
  }

  setDelay(ms: number, match?: RegExp): void {
    this.faults.setDelay(ms, match);
  }

  failNext(n: number, how: FailureMode, match?: RegExp): void {
    this.faults.failNext(n, how, match);
  }

  setFailing(how: FailureMode | null, match?: RegExp): void {
    this.faults.setFailing(how, match);
  }

  setMempoolChanged(): void {
    this.chain.bumpMempool();
  }

  attach(channel: AttachedChannel): () => void {
    this.channels.add(channel);
    return () => this.channels.delete(channel);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const hold of this.holds) hold.drop();
    this.holds.clear();
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
    this.rpcChannel?.close();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const recorded = this.record(req.method ?? 'GET', url, req.headers);
    this.inFlight += 1;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    res.once('close', () => (this.inFlight -= 1));
    const answer = (): void => {
      // Faults and the chain as they are when the answer goes (a held one: when released).
      const failure = this.faults.take(url);
      const channel = this.channelFor(url);
      this.later(this.faults.delayFor(url), () => {
        if (failure && !isWrongResource(failure)) fail(req, res, failure);
        else if (channel?.request) channel.request(req, res);
        else {
          dispatch(this.chain, req, failure?.answerAs)
            .then(({ reply, deprecated }) => send(req, res, reply, deprecated))
            .catch((error: unknown) => crashed(res, error));
        }
      });
    };
    const hold = [...this.holds].find((h) => h.matches(recorded));
    if (hold) hold.take(answer);
    else answer();
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // An upgraded socket leaves node:http's error handling: a client that resets it (as the
    // proxy's link does after reading a refusal) must not become an uncaught exception here.
    socket.on('error', () => socket.destroy());
    const url = req.url ?? '/';
    this.record('UPGRADE', url, req.headers);
    const failure = this.faults.take(url);
    this.later(this.faults.delayFor(url), () => {
      const channel = this.channelFor(url);
      if (failure) refuseUpgrade(socket, failure);
      else if (this.rpcChannel?.handles(url)) this.rpcChannel.handleUpgrade(req, socket, head);
      else if (channel) channel.upgrade(req, socket, head);
      else if (WS_PATH_PREFIXES.some((prefix) => url.startsWith(prefix))) {
        this.wss.handleUpgrade(req, socket, head, echo);
      } else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
  }

  private channelFor(url: string): AttachedChannel | undefined {
    for (const channel of this.channels) if (url.startsWith(channel.prefix)) return channel;
    return undefined;
  }

  private record(method: string, url: string, headers: IncomingHttpHeaders): RecordedRequest {
    const recorded = { method, url, path: splitUrl(url).path, headers: { ...headers } };
    this.requests.push(recorded);
    return recorded;
  }

  private later(ms: number, run: () => void): void {
    if (ms <= 0) return run();
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }
}

/** What `count` and `hold` match: a string the path (no query) or the whole url, a RegExp the url. */
function requestTest(match: string | RegExp | ((r: RecordedRequest) => boolean)): (r: RecordedRequest) => boolean {
  if (typeof match === 'string') return (r) => r.path === match || r.url === match;
  if (match instanceof RegExp) return (r) => matches(match, r.url);
  return match;
}

function echo(ws: WebSocket): void {
  // A client that breaks the protocol must not crash the test process with an unhandled 'error'.
  ws.on('error', () => ws.terminate());
  ws.on('message', (data, isBinary) => ws.send(isBinary ? data : `echo:${data.toString()}`));
}

/** The upstream's pushes for the fake chain's changes: a new block, a tx entering the mempool, a tx mined. */
function pushChainEvent(channel: FakeRpcChannel, event: ChainEvent): void {
  switch (event.kind) {
    case 'block':
      channel.publish('block', JSON.parse(legacyBlockJson(event.block)) as Record<string, unknown>);
      break;
    case 'mempool':
      channel.publish('mempool', event.tx);
      channel.publish('tx_update', event.tx);
      break;
    case 'mined':
      channel.publish('tx_update', event.tx);
      break;
  }
}
