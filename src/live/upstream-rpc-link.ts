/**
 * One JSON-RPC WebSocket connection to ONE upstream's `/extended/v1/ws`, shared by everything in
 * the process that wants the upstream's notifications (the push feed, the WebSocket fan-out), so
 * one upstream costs one connection whatever the number of clients.
 *
 * Topics are reference-counted: the first holder of a topic sends `subscribe` upstream, later
 * holders get the first reply; the last one to let go sends `unsubscribe`. The connection is kept
 * open for ever (until close()): when it drops, or stops answering pings, it is opened again with
 * backoff and jitter and every held topic is subscribed again before the link says `open`.
 * An upstream that refuses the upgrade (many serve no WebSocket) is tried again ever more seldom,
 * up to live.push.reconnectMaxMs apart (retry-backoff.ts), and said so once, not per attempt.
 *
 * The upstream is trusted for nothing: frames are bounded (maxPayload), what does not parse as a
 * JSON-RPC reply or notification is dropped, and a reply only settles a request this link sent.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { systemClock, type Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { failedWith, refusedWith, type ConnectFailure } from './connect-failure.js';
import { RetryBackoff } from './retry-backoff.js';

export interface RpcNotification {
  method: string;
  params: unknown;
  /** The frame's text exactly as the upstream sent it (the fan-out forwards these bytes). */
  text: string;
}

export type RpcReply = { ok: true; result: unknown } | { ok: false; error: unknown } | { ok: false; error: 'closed' | 'timeout' | 'over-limit' };

export type LinkState = 'connecting' | 'open' | 'closed';

/** Why the link is not open, while its last attempt failed, and when it tries again (clock time). */
export interface LinkFailure extends ConnectFailure {
  retryAt: number;
}

export interface UpstreamRpcLinkOptions {
  /** http(s)://host:port; the link connects to ws(s)://host:port/extended/v1/ws. */
  origin: string;
  /** The operator's headers (x-api-key), as passthrough upgrades send them; read at every connect. */
  headers: () => Readonly<Record<string, string>>;
  /** Also how long a connection must stay open for the next drop to start the backoff again from reconnectMinMs. */
  pingIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** Distinct topics held at once (live.fanout.maxUpstreamSubscriptions); beyond, `over-limit`. */
  maxSubscriptions: number;
  telemetry: Telemetry;
  clock?: Clock;
  /** Longest a subscribe waits for its reply (also while the link is down); default 10 s. */
  requestTimeoutMs?: number;
  /** Largest frame accepted from the upstream; a larger one closes the connection (1009). Default MAX_FRAME_BYTES. */
  maxFrameBytes?: number;
}

/** The upstream's JSON-RPC path (ws-rpc-channel.ts accepts any upgrade starting with it). */
export const RPC_PATH = '/extended/v1/ws';
/**
 * A block notification carries the legacy Block with every tx id (a few hundred KB for the
 * largest blocks); an address_tx_update a whole transaction. 8 MiB is far beyond both and still
 * bounds what one frame can cost.
 */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

interface Held {
  key: string;
  holders: number;
  params: Record<string, unknown>;
  /** What holders are given: the upstream's latest reply for this topic (a resubscription's replaces the first). */
  reply: Promise<RpcReply>;
  /** Set while the first reply is awaited: gives it to every holder so far. */
  settle?: (reply: RpcReply) => void;
  timer?: NodeJS.Timeout;
}

interface Pending {
  settle: (reply: RpcReply) => void;
  timer: NodeJS.Timeout;
}

/** The ws(s) URL of an upstream origin's JSON-RPC channel. */
export function rpcUrlOf(origin: string): string {
  const url = new URL(origin);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = RPC_PATH;
  url.search = '';
  url.hash = '';
  return url.toString();
}

export class UpstreamRpcLink {
  private socket: WebSocket | undefined;
  private current: LinkState = 'connecting';
  private started = false;
  private readonly held = new Map<string, Held>();
  /** Requests sent on the current connection, by their id. */
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly backoff: RetryBackoff;
  private readonly clock: Clock;
  /** Set while the last attempt failed: why, and when the next one goes. */
  private lastFailure: LinkFailure | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private awaitingPong = false;
  private readonly notificationListeners = new Set<(n: RpcNotification) => void>();
  private readonly stateListeners = new Set<(state: LinkState) => void>();
  private readonly requestTimeoutMs: number;
  private readonly url: string;

  constructor(private readonly options: UpstreamRpcLinkOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.url = rpcUrlOf(options.origin);
    this.clock = options.clock ?? systemClock;
    this.backoff = new RetryBackoff({ minMs: options.reconnectMinMs, maxMs: options.reconnectMaxMs, stayedUpMs: options.pingIntervalMs });
  }

  get state(): LinkState {
    return this.current;
  }

  get origin(): string {
    return this.options.origin;
  }

  /** Why the link is not open and when it tries again, while its last attempt failed (a refused upgrade, a connect error). */
  get failure(): LinkFailure | undefined {
    return this.lastFailure;
  }

  /** Distinct topics held now. */
  get topics(): number {
    return this.held.size;
  }

  /** Connects; reconnects with backoff and jitter for ever, until close(). */
  start(): void {
    if (this.started || this.current === 'closed') return;
    this.started = true;
    this.connect();
  }

  /**
   * One more holder of a topic. The first holder sends `subscribe` with `params` upstream (at
   * once, or when the connection opens) and gets the upstream's reply, or `timeout` after
   * requestTimeoutMs; later holders get the latest reply while the topic is held. Every
   * subscribe must be matched by one unsubscribe, except one answered `over-limit` (nothing is
   * held then) or `closed` by a closed link.
   */
  subscribe(key: string, params: Record<string, unknown>): Promise<RpcReply> {
    if (this.current === 'closed') return Promise.resolve({ ok: false, error: 'closed' });
    const existing = this.held.get(key);
    if (existing) {
      existing.holders += 1;
      return existing.reply;
    }
    if (this.held.size >= this.options.maxSubscriptions) return Promise.resolve({ ok: false, error: 'over-limit' });
    const entry: Held = { key, holders: 1, params, reply: Promise.resolve<RpcReply>({ ok: false, error: 'closed' }) };
    entry.reply = new Promise<RpcReply>((resolve) => (entry.settle = resolve));
    entry.timer = setTimeout(() => this.answered(entry, { ok: false, error: 'timeout' }), this.requestTimeoutMs);
    entry.timer.unref();
    this.held.set(key, entry);
    const socket = this.socket;
    if (socket?.readyState === WebSocket.OPEN) void this.sendSubscribe(entry, socket);
    return entry.reply;
  }

  /** One holder fewer; the last one sends `unsubscribe` upstream. */
  unsubscribe(key: string): void {
    const entry = this.held.get(key);
    if (!entry) return;
    entry.holders -= 1;
    if (entry.holders > 0) return;
    this.held.delete(key);
    this.answered(entry, { ok: false, error: 'closed' });
    // Nobody waits for its reply; a connection that drops forgets the topic anyway.
    const socket = this.socket;
    if (socket?.readyState === WebSocket.OPEN) void this.request(socket, 'unsubscribe', entry.params);
  }

  /** Every notification (a frame with `method` and no `id`). Returns the way to stop listening. */
  onNotification(listener: (n: RpcNotification) => void): () => void {
    this.notificationListeners.add(listener);
    return () => this.notificationListeners.delete(listener);
  }

  /** `open` is told after every held topic was subscribed again; `connecting` when the connection dropped; `closed` once. */
  onState(listener: (state: LinkState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.current === 'closed') return;
    this.setState('closed');
    clearTimeout(this.reconnectTimer);
    this.stopPings();
    this.settlePending({ ok: false, error: 'closed' });
    for (const entry of this.held.values()) this.answered(entry, { ok: false, error: 'closed' });
    this.held.clear();
    const socket = this.socket;
    this.socket = undefined;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.terminate();
    await closed;
  }

  private connect(): void {
    if (this.current === 'closed') return;
    let socket: WebSocket;
    this.options.telemetry.ownUpstreamRequest('push_connect');
    try {
      socket = new WebSocket(this.url, {
        headers: { ...this.options.headers() },
        maxPayload: this.options.maxFrameBytes ?? MAX_FRAME_BYTES,
        handshakeTimeout: this.requestTimeoutMs,
        perMessageDeflate: false,
      });
    } catch (error) {
      // A header value ws refuses (settings are checked at start, so hardly ever): try again later.
      this.scheduleReconnect(undefined, failedWith(error));
      return;
    }
    this.socket = socket;
    // How long it stayed open is a duration: monotonic time, not the (injectable) wall clock.
    let openedAt: number | undefined;
    let failure: ConnectFailure | undefined;
    socket.on('open', () => {
      openedAt = performance.now();
      this.lastFailure = undefined;
      this.options.telemetry.upstreamWsConnectionChanged('rpc', true);
      this.options.telemetry.upstreamWsAvailable('rpc', this.options.origin);
      this.startPings(socket);
      void this.resubscribe(socket);
    });
    // Any answer but 101 (404: no WebSocket here; 401/403: a gateway refusing it): its status is
    // the reason. With this listener ws leaves the handshake to us: terminate() aborts it and
    // 'error' and 'close' follow as for any failed attempt.
    socket.on('unexpected-response', (_request, response) => {
      failure = refusedWith(response.statusCode ?? 0);
      response.resume();
      socket.terminate();
    });
    socket.on('message', (data, isBinary) => {
      this.awaitingPong = false; // any frame shows the connection is alive
      if (!isBinary) this.onFrame(textOf(data));
    });
    socket.on('pong', () => (this.awaitingPong = false));
    // 'error' is always followed by 'close'; a listener keeps it from being thrown.
    socket.on('error', (error) => {
      if (openedAt === undefined) failure ??= failedWith(error);
    });
    socket.on('close', () => {
      if (openedAt !== undefined) this.options.telemetry.upstreamWsConnectionChanged('rpc', false);
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.stopPings();
      // Their replies will not come. Held topics wait for the next connection (or their timeout).
      this.settlePending({ ok: false, error: 'closed' });
      if (this.current === 'closed') return;
      this.setState('connecting');
      this.scheduleReconnect(openedAt === undefined ? undefined : performance.now() - openedAt, failure);
    });
  }

  /** The next attempt, after a connection that was open `upMs`, or one that did not open (`failure`). */
  private scheduleReconnect(upMs: number | undefined, failure?: ConnectFailure): void {
    if (this.current === 'closed') return;
    const delay = this.backoff.next(upMs);
    if (upMs === undefined) {
      const why = failure ?? { kind: 'failed', reason: 'connection failed' };
      this.lastFailure = { ...why, retryAt: this.clock() + delay };
      this.options.telemetry.upstreamWsUnavailable('rpc', this.options.origin, why.reason, delay);
    }
    this.reconnectTimer = setTimeout(() => {
      this.options.telemetry.upstreamWsReconnected('rpc');
      this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }

  /** Every held topic subscribed on this connection; then the link is `open`. */
  private async resubscribe(socket: WebSocket): Promise<void> {
    await Promise.all([...this.held.values()].map((entry) => this.sendSubscribe(entry, socket)));
    if (this.socket !== socket || socket.readyState !== WebSocket.OPEN || this.current === 'closed') return;
    this.setState('open');
  }

  private async sendSubscribe(entry: Held, socket: WebSocket): Promise<void> {
    const reply = await this.request(socket, 'subscribe', entry.params);
    // A dropped connection answers nothing: the next one subscribes again.
    if (!reply.ok && reply.error === 'closed') return;
    if (this.held.get(entry.key) === entry) this.answered(entry, reply);
  }

  /** The topic's reply: given to the holders waiting for it, and to later ones. */
  private answered(entry: Held, reply: RpcReply): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    const settle = entry.settle;
    entry.settle = undefined;
    if (settle) settle(reply);
    else if (reply.ok || (reply.error !== 'timeout' && reply.error !== 'closed')) entry.reply = Promise.resolve(reply);
  }

  private request(socket: WebSocket, method: 'subscribe' | 'unsubscribe', params: Record<string, unknown>): Promise<RpcReply> {
    const id = this.nextId++;
    return new Promise<RpcReply>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, error: 'timeout' });
      }, this.requestTimeoutMs);
      timer.unref();
      this.pending.set(id, { settle: resolve, timer });
      socket.send(JSON.stringify({ jsonrpc: '2.0', method, params, id }), (error) => {
        if (error) this.settle(id, { ok: false, error: 'closed' });
      });
    });
  }

  private settle(id: number, reply: RpcReply): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    pending.settle(reply);
  }

  private settlePending(reply: RpcReply): void {
    for (const id of [...this.pending.keys()]) this.settle(id, reply);
  }

  /** A text frame: a reply to one of this link's requests, a notification, or dropped. */
  private onFrame(text: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return;
    const message = frame as Record<string, unknown>;
    if (typeof message.method === 'string' && !('id' in message)) {
      this.notify({ method: message.method, params: message.params, text });
      return;
    }
    if (typeof message.id !== 'number') return;
    if ('error' in message) this.settle(message.id, { ok: false, error: message.error });
    else if ('result' in message) this.settle(message.id, { ok: true, result: message.result });
  }

  private notify(notification: RpcNotification): void {
    for (const listener of this.notificationListeners) {
      try {
        listener(notification);
      } catch {
        // One listener's fault must not keep the notification from the others.
      }
    }
  }

  private setState(state: LinkState): void {
    if (this.current === state) return;
    this.current = state;
    for (const listener of this.stateListeners) {
      try {
        listener(state);
      } catch {
        // As for notifications.
      }
    }
  }

  /**
   * A ping every pingIntervalMs; a connection that sent nothing (no pong, no frame) by the next
   * one is dead though TCP may not know it yet: terminated, and so reconnected.
   */
  private startPings(socket: WebSocket): void {
    this.stopPings();
    this.awaitingPong = false;
    this.pingTimer = setInterval(() => {
      if (this.awaitingPong) {
        socket.terminate();
        return;
      }
      this.awaitingPong = true;
      socket.ping();
    }, this.options.pingIntervalMs);
    this.pingTimer.unref();
  }

  private stopPings(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }
}

function textOf(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
