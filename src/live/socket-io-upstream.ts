/**
 * The proxy's one Socket.IO connection to the upstream (`/socket.io/`, the official client's
 * transport: socket.io-client over WebSocket), subscribed to the union of the rooms its clients
 * hold. Each event the upstream sends is handed on with the packet's text exactly as it came
 * (`2["block",{…}]`), so that clients get the upstream's bytes, never a re-encoding.
 *
 * The connection goes to the healthiest upstream at each (re)connect, with the operator's
 * headers. When it drops (or cannot be opened) it is opened again after a delay that doubles
 * from live.push.reconnectMinMs up to reconnectMaxMs, with jitter, for as long as the proxy
 * runs; every held room is subscribed again, one `subscribe` each, and awaited.
 */
import { Manager, type ManagerOptions, type Socket } from 'socket.io-client';
import type { Logger } from '../logger.js';
import type { Telemetry } from '../telemetry/telemetry.js';

export const CHANNEL = 'socket_io';

/** The longest frame taken from the upstream; a larger one closes the connection (it reconnects). */
export const MAX_UPSTREAM_FRAME_BYTES = 16 * 1024 * 1024;

export interface SocketIoUpstreamOptions {
  /** The upstream to connect to now (health.preferredOrigin()). */
  origin: () => string;
  /** The operator's headers for that upstream (x-api-key), as passthrough upgrades send. */
  headers: (origin: string) => Readonly<Record<string, string>>;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** How long a `subscribe` waits for the upstream's acknowledgement; also the connect timeout. */
  ackTimeoutMs: number;
  /** live.fanout.maxUpstreamSubscriptions: distinct rooms held at once. */
  maxRooms: number;
  telemetry: Telemetry;
  logger: Logger;
}

/** `hold` refused: the union of rooms is at live.fanout.maxUpstreamSubscriptions. */
export const ROOMS_FULL = 'full';

export class SocketIoUpstream {
  /** Room → clients holding it. The union the upstream is subscribed to. */
  private readonly holders = new Map<string, number>();
  /** Room → the upstream's acknowledgement of its `subscribe` on the current connection. */
  private readonly subscribed = new Map<string, Promise<void>>();
  private readonly listeners = new Set<(room: string, packet: string) => void>();
  private manager: Manager | undefined;
  private socket: Socket | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private everConnected = false;
  private closed = false;
  /** Connections opened (first one included) and reconnects (every one after the first). */
  opened = 0;
  reconnects = 0;

  constructor(private readonly options: SocketIoUpstreamOptions) {}

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

  start(): void {
    this.connect();
  }

  /**
   * One more client holds `room`. Settles when the upstream acknowledged its subscription (or at
   * once if another client already holds it and it is acknowledged; or when no connection is
   * open: the room is subscribed at the next connect). ROOMS_FULL: a new room over the limit.
   */
  hold(room: string): Promise<void> | typeof ROOMS_FULL {
    const held = this.holders.get(room);
    if (held !== undefined) {
      this.holders.set(room, held + 1);
      return this.subscribed.get(room) ?? Promise.resolve();
    }
    if (this.holders.size >= this.options.maxRooms) return ROOMS_FULL;
    this.holders.set(room, 1);
    return this.subscribe(room);
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
    return acknowledged;
  }

  private connect(): void {
    if (this.closed) return;
    let origin: string;
    try {
      origin = this.options.origin();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'no upstream for the Socket.IO fan-out');
      this.scheduleReconnect();
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
    // The event name of the packet being decoded: socket.io-client decodes a frame (and calls
    // onAny) before the engine's 'message' for that frame reaches the listener below, which then
    // hands on the frame's own text, checked to be that event's packet.
    let decodedEvent: string | undefined;
    socket.onAny((event: unknown) => {
      decodedEvent = typeof event === 'string' ? event : undefined;
    });
    manager.on('open', () => {
      manager.engine.on('message', (data: unknown) => {
        const event = decodedEvent;
        decodedEvent = undefined;
        if (event === undefined || typeof data !== 'string' || !isEventPacket(data, event)) return;
        this.options.telemetry.wsMessage(CHANNEL, 'upstream_in');
        if (!this.holders.has(event)) return;
        for (const listener of this.listeners) listener(event, data);
      });
    });
    socket.on('connect', () => this.onConnect(socket));
    socket.on('connect_error', (error: Error) => {
      this.options.logger.warn({ origin, err: error.message }, 'upstream Socket.IO connection failed');
      this.lost(socket);
    });
    socket.on('disconnect', (reason: string) => {
      this.options.logger.warn({ origin, reason }, 'upstream Socket.IO connection dropped; reconnecting');
      this.options.telemetry.upstreamWsDisconnected(CHANNEL);
      this.lost(socket);
    });
    socket.connect();
  }

  private onConnect(socket: Socket): void {
    this.opened += 1;
    this.failures = 0;
    if (this.everConnected) {
      this.reconnects += 1;
      this.options.telemetry.upstreamWsReconnected(CHANNEL);
    }
    this.everConnected = true;
    this.options.telemetry.upstreamWsConnected(CHANNEL);
    this.subscribed.clear();
    // Every held room again, on this connection: what the upstream sends from its acknowledgement on reaches the clients.
    if (socket === this.socket) for (const room of this.holders.keys()) void this.subscribe(room);
  }

  /** The connection `socket` is gone (or never opened): drop it and try again later. */
  private lost(socket: Socket): void {
    if (socket !== this.socket) return;
    this.drop();
    this.scheduleReconnect();
  }

  private drop(): void {
    const socket = this.socket;
    const manager = this.manager;
    this.socket = undefined;
    this.manager = undefined;
    this.subscribed.clear();
    if (socket?.connected) this.options.telemetry.upstreamWsDisconnected(CHANNEL);
    socket?.removeAllListeners();
    socket?.offAny();
    socket?.disconnect();
    manager?.engine?.close();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    const { reconnectMinMs, reconnectMaxMs } = this.options;
    const base = Math.min(reconnectMaxMs, reconnectMinMs * 2 ** Math.min(this.failures, 30));
    this.failures += 1;
    // ±50% jitter, so that proxies restarted together do not reconnect in step.
    const delay = Math.min(reconnectMaxMs, base * (0.5 + Math.random()));
    this.retry = setTimeout(() => this.connect(), delay);
    this.retry.unref();
  }
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
