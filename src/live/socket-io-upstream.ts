/**
 * The proxy's one Socket.IO connection to the upstream (`/socket.io/`, the official client's
 * transport: socket.io-client over WebSocket), subscribed to the union of the rooms its clients
 * hold. Each event the upstream sends is handed on with the packet's text exactly as it came
 * (`2["block",{…}]`), so that clients get the upstream's bytes, never a re-encoding.
 *
 * The connection goes to the healthiest upstream at each (re)connect, with the operator's
 * headers. When it drops (or cannot be opened) it is opened again after a delay that doubles
 * from live.push.reconnectMinMs up to reconnectMaxMs, with jitter (retry-backoff.ts), for as
 * long as the proxy runs; every held room is subscribed again, one `subscribe` each, and awaited.
 * An upstream that keeps refusing is logged once (telemetry), not at every attempt.
 */
import { performance } from 'node:perf_hooks';
import { Manager, type ManagerOptions, type Socket } from 'socket.io-client';
import type { Logger } from '../logger.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { MAX_TOPIC_LENGTH } from './client-bounds.js';
import { socketIoFailure } from './connect-failure.js';
import { RetryBackoff } from './retry-backoff.js';

export const CHANNEL = 'socket_io';

/** The longest frame taken from the upstream; a larger one closes the connection (it reconnects). */
export const MAX_UPSTREAM_FRAME_BYTES = 16 * 1024 * 1024;

/** Event packets received and not yet dispatched by socket.io-client (dispatch is one tick later). */
const MAX_UNDISPATCHED_EVENTS = 4096;

export interface SocketIoUpstreamOptions {
  /** The upstream to connect to now (health.preferredOrigin()). */
  origin: () => string;
  /** The operator's headers for that upstream (x-api-key), as passthrough upgrades send. */
  headers: (origin: string) => Readonly<Record<string, string>>;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** A connection open this long counts as up: the next drop starts the backoff again (live.push.pingIntervalMs). */
  stayedUpMs: number;
  /** How long a `subscribe` waits for the upstream's acknowledgement; also the connect timeout. */
  ackTimeoutMs: number;
  /** live.fanout.maxUpstreamSubscriptions: distinct rooms held at once. */
  maxRooms: number;
  telemetry: Telemetry;
  logger: Logger;
}

/** `hold` refused: the union of rooms is at live.fanout.maxUpstreamSubscriptions. */
export const ROOMS_FULL = 'full';
/** `hold` refused: a room name over MAX_TOPIC_LENGTH (the fan-out refuses it first; never kept nor sent upstream). */
export const ROOM_TOO_LONG = 'too-long';

export class SocketIoUpstream {
  /** Room → clients holding it. The union the upstream is subscribed to. */
  private readonly holders = new Map<string, number>();
  /** Room → the upstream's acknowledgement of its `subscribe` on the current connection. */
  private readonly subscribed = new Map<string, Promise<void>>();
  private readonly listeners = new Set<(room: string, packet: string) => void>();
  private manager: Manager | undefined;
  private socket: Socket | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Attempts that failed since the last connection; while above 0 nobody waits for an acknowledgement. */
  private failures = 0;
  private readonly backoff: RetryBackoff;
  /** When the current connection opened (performance.now(): a duration is measured, not wall time); undefined while none is open. */
  private connectedAt: number | undefined;
  private everConnected = false;
  private closed = false;
  private started = false;
  /** Room → clients waiting for its subscription on the next connection. */
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Connections opened (first one included) and reconnects (every one after the first). */
  opened = 0;
  reconnects = 0;

  constructor(private readonly options: SocketIoUpstreamOptions) {
    this.backoff = new RetryBackoff({ minMs: options.reconnectMinMs, maxMs: options.reconnectMaxMs, stayedUpMs: options.stayedUpMs });
  }

  get connected(): boolean {
    return this.socket?.connected ?? false;
  }

  /** Distinct rooms held upstream now. */
  get rooms(): number {
    return this.holders.size;
  }

  holds(room: string): boolean {
    return this.holders.has(room);
  }

  /**
   * One more client holds `room`. Settles when the upstream has acknowledged its subscription on
   * the current connection (at once if it already has), or after ackTimeoutMs at the latest (no
   * connection yet: the room is subscribed at the next connect). ROOMS_FULL: a new room over
   * live.fanout.maxUpstreamSubscriptions, ROOM_TOO_LONG: a name over MAX_TOPIC_LENGTH. The first
   * hold opens the connection: a proxy no client asks anything of costs the upstream nothing.
   */
  hold(room: string): Promise<void> | typeof ROOMS_FULL | typeof ROOM_TOO_LONG {
    if (room.length > MAX_TOPIC_LENGTH) return ROOM_TOO_LONG;
    const held = this.holders.get(room);
    if (held !== undefined) {
      this.holders.set(room, held + 1);
      return this.acknowledgement(room);
    }
    if (this.holders.size >= this.options.maxRooms) return ROOMS_FULL;
    this.holders.set(room, 1);
    if (!this.started) {
      this.started = true;
      this.connect();
    }
    if (this.socket?.connected) void this.subscribe(room);
    return this.acknowledgement(room);
  }

  /** While the upstream cannot be reached, nobody waits for it: the room is subscribed when it can. */
  private acknowledgement(room: string): Promise<void> {
    if (!this.socket?.connected && this.failures > 0) return Promise.resolve();
    return this.nextAcknowledgement(room);
  }

  /** One client fewer holds `room`; the last one unsubscribes it upstream. */
  release(room: string): void {
    const held = this.holders.get(room);
    if (held === undefined) return;
    if (held > 1) {
      this.holders.set(room, held - 1);
      return;
    }
    this.holders.delete(room);
    this.subscribed.delete(room);
    // The upstream never acknowledges an unsubscribe.
    if (this.socket?.connected) this.socket.emit('unsubscribe', room);
  }

  /** Every event of a held room: the room (the upstream's event name) and the packet's text. */
  onEvent(listener: (room: string, packet: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.drop();
    for (const waiting of [...this.waiters.values()]) for (const done of [...waiting]) done();
  }

  /** Settles when `room` is acknowledged on the current (or next) connection, or after ackTimeoutMs. */
  private nextAcknowledgement(room: string): Promise<void> {
    const subscribed = this.subscribed.get(room);
    if (subscribed) return subscribed;
    return new Promise<void>((resolve) => {
      let waiting = this.waiters.get(room);
      if (!waiting) this.waiters.set(room, (waiting = new Set()));
      const done = (): void => {
        clearTimeout(timer);
        waiting.delete(done);
        if (waiting.size === 0 && this.waiters.get(room) === waiting) this.waiters.delete(room);
        resolve();
      };
      const timer = setTimeout(done, this.options.ackTimeoutMs);
      timer.unref();
      waiting.add(done);
    });
  }

  private subscribe(room: string): Promise<void> {
    const socket = this.socket;
    if (!socket?.connected) return Promise.resolve();
    const acknowledged = new Promise<void>((resolve) => {
      socket.timeout(this.options.ackTimeoutMs).emit('subscribe', room, (timeout: Error | null, error: unknown) => {
        if (timeout) this.options.logger.warn({ room }, 'upstream Socket.IO subscribe not acknowledged');
        else if (error !== null && error !== undefined) this.options.logger.warn({ room, error: String(error) }, 'upstream Socket.IO subscribe refused');
        resolve();
      });
    });
    this.subscribed.set(room, acknowledged);
    void acknowledged.then(() => {
      for (const done of [...(this.waiters.get(room) ?? [])]) done();
    });
    return acknowledged;
  }

  private connect(): void {
    if (this.closed) return;
    let origin: string;
    try {
      origin = this.options.origin();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'no upstream for the Socket.IO fan-out');
      this.scheduleReconnect(undefined);
      return;
    }
    // maxPayload reaches the `ws` WebSocket (engine.io-client picks it), though its types omit it.
    const managerOptions: Partial<ManagerOptions> & { maxPayload: number } = {
      path: '/socket.io/',
      transports: ['websocket'],
      // This class reconnects itself: to whichever upstream is healthiest then, with its headers.
      reconnection: false,
      autoConnect: false,
      timeout: this.options.ackTimeoutMs,
      extraHeaders: { ...this.options.headers(origin) },
      maxPayload: MAX_UPSTREAM_FRAME_BYTES,
    };
    const manager = new Manager(origin, managerOptions);
    const socket = manager.socket('/');
    this.manager = manager;
    this.socket = socket;
    // Each event's packet text, paired with its decoding: socket.io-client decodes a frame when
    // the engine hands it on, and dispatches it (onAny) a tick later, in order. So the texts of
    // event packets wait here, first in first out, for their decoded event name.
    const eventTexts: Array<string | null> = [];
    manager.on('open', () => {
      manager.engine.on('message', (data: unknown) => {
        const kind = typeof data === 'string' ? eventPacketKind(data) : 'none';
        if (kind === 'none') return;
        // An event before the connect (Socket.IO servers never send one) or a backlog the
        // dispatch does not catch up with: not an upstream to follow; reconnect.
        if (!socket.connected || eventTexts.length >= MAX_UNDISPATCHED_EVENTS) {
          this.options.logger.warn({ origin }, 'upstream Socket.IO sent events out of protocol; reconnecting');
          this.lost(socket);
          return;
        }
        // Events not handed on (binary, or asking for an acknowledgement) keep their place in line.
        eventTexts.push(kind === 'text' ? (data as string) : null);
      });
    });
    socket.onAny((event: unknown) => {
      const text = eventTexts.shift();
      if (typeof text !== 'string' || typeof event !== 'string' || !isEventPacket(text, event)) return;
      this.options.telemetry.wsMessage(CHANNEL, 'upstream_in');
      if (!this.holders.has(event)) return;
      for (const listener of this.listeners) listener(event, text);
    });
    socket.on('connect', () => this.onConnect(socket, origin));
    // Said once per outage by telemetry (upstreamWsUnavailable), not once per attempt.
    socket.on('connect_error', (error: Error) => this.lost(socket, { origin, reason: socketIoFailure(error).reason }));
    socket.on('disconnect', (reason: string) => {
      this.options.logger.warn({ origin, reason }, 'upstream Socket.IO connection dropped; reconnecting');
      this.options.telemetry.upstreamWsConnectionChanged(CHANNEL, false);
      this.lost(socket);
    });
    this.options.telemetry.ownUpstreamRequest('push_connect');
    socket.connect();
  }

  private onConnect(socket: Socket, origin: string): void {
    this.opened += 1;
    this.failures = 0;
    this.connectedAt = performance.now();
    this.options.telemetry.upstreamWsAvailable(CHANNEL, origin);
    if (this.everConnected) {
      this.reconnects += 1;
      this.options.telemetry.upstreamWsReconnected(CHANNEL);
    }
    this.everConnected = true;
    this.options.telemetry.upstreamWsConnectionChanged(CHANNEL, true);
    this.subscribed.clear();
    // Every held room again, on this connection: what the upstream sends from its acknowledgement on reaches the clients.
    if (socket === this.socket) for (const room of this.holders.keys()) void this.subscribe(room);
  }

  /** The connection `socket` is gone (or never opened: `failure` says why): drop it and try again later. */
  private lost(socket: Socket, failure?: { origin: string; reason: string }): void {
    if (socket !== this.socket) return;
    const upMs = this.connectedAt === undefined ? undefined : performance.now() - this.connectedAt;
    this.drop();
    this.scheduleReconnect(upMs, failure);
  }

  private drop(): void {
    const socket = this.socket;
    const manager = this.manager;
    this.socket = undefined;
    this.connectedAt = undefined;
    this.manager = undefined;
    this.subscribed.clear();
    if (socket?.connected) this.options.telemetry.upstreamWsConnectionChanged(CHANNEL, false);
    socket?.removeAllListeners();
    socket?.offAny();
    socket?.disconnect();
    manager?.engine?.close();
  }

  /** The next attempt, after a connection that was open `upMs`, or one that did not open (undefined). */
  private scheduleReconnect(upMs: number | undefined, failure?: { origin: string; reason: string }): void {
    if (this.closed) return;
    const delay = this.backoff.next(upMs);
    this.failures += 1;
    if (failure) {
      this.options.telemetry.upstreamWsUnavailable(CHANNEL, failure.origin, failure.reason, delay);
      // While the upstream cannot be reached nobody waits for it (acknowledgement()): nor do the
      // clients that asked before the first attempt failed.
      for (const waiting of [...this.waiters.values()]) for (const done of [...waiting]) done();
    }
    this.retry = setTimeout(() => this.connect(), delay);
    this.retry.unref();
  }
}

/**
 * What socket.io-client makes of an engine message on the main namespace: an EVENT packet that
 * is handed on as it is (`2[`), another event it dispatches too (an EVENT with an ack id, a
 * BINARY_EVENT), or nothing dispatched as an event (connect, ack, another namespace).
 */
export function eventPacketKind(data: string): 'text' | 'other-event' | 'none' {
  const type = data.charAt(0);
  if (type !== '2' && type !== '5') return 'none';
  let at = 1;
  if (type === '5') {
    // 5<attachments>-
    while (at < data.length && data.charCodeAt(at) >= 48 && data.charCodeAt(at) <= 57) at += 1;
    if (at === 1 || data.charAt(at) !== '-') return 'none';
    at += 1;
  }
  if (data.charAt(at) === '/') return 'none'; // another namespace
  const idStart = at;
  while (at < data.length && data.charCodeAt(at) >= 48 && data.charCodeAt(at) <= 57) at += 1;
  if (data.charAt(at) !== '[') return 'none';
  return type === '2' && at === idStart ? 'text' : 'other-event';
}

/**
 * The text of a Socket.IO EVENT packet of the main namespace without an ack id for `event`:
 * `2["<event>",…]`, the event name spelled as JSON.stringify spells it (as the upstream's
 * encoder does). Anything else (another namespace, an ack request, binary) is not handed on.
 */
function isEventPacket(data: string, event: string): boolean {
  const head = `2[${JSON.stringify(event)}`;
  if (!data.startsWith(head)) return false;
  const next = data.charAt(head.length);
  return next === ',' || next === ']';
}
