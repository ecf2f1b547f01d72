/**
 * The Socket.IO fan-out (`/socket.io/`, issue 16): clients connect to the proxy as they do to
 * the upstream's Socket.IO channel (same path, options, handshake `subscriptions`, `subscribe`
 * and `unsubscribe` with the same acknowledgements, the same events), and the proxy holds ONE
 * connection to the upstream (socket-io-upstream.ts), subscribed to the union of its clients'
 * rooms. Each event goes to the clients in its room as the packet the upstream sent, unchanged.
 *
 * The client side is a socket.io Server on an engine.io server this module drives by hand
 * (`handleUpgrade` from the upgrade router, `handleRequest` from the request pipeline for the
 * polling transport), so that the request-target decision and rate-limit admission come first,
 * as for any request.
 *
 * Bounds: a client (an engine.io connection, whatever its transport) takes one of the slots
 * shared with the JSON-RPC fan-out (a handshake beyond gets 503); its messages are rated
 * (MessageRate, beyond: closed); its subscriptions are counted and each topic's length bounded
 * (MAX_TOPIC_LENGTH) (beyond: the `subscribe` is acknowledged with an error, a handshake refused,
 * nothing held nor sent upstream); bytes waiting to be written to it past
 * live.fanout.maxBufferedBytesPerClient close it (a slow client is dropped, never buffered
 * without end); the union of rooms held upstream is capped (maxUpstreamSubscriptions).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket as NetSocket } from 'node:net';
import { Server as EngineServer, type Socket as EngineSocket } from 'engine.io';
import { Server as SocketIoServer, type Socket } from 'socket.io';
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { unavailable } from '../errors.js';
import type { Logger } from '../logger.js';
import { sendError, sendSocketError } from '../http/respond.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { ClientSlots, MAX_TOPIC_LENGTH, MessageRate, tooSlow } from './client-bounds.js';
import type { LiveSettings } from './settings.js';
import { checkTopics, handshakeTopics, invalidTopicMessage, topicKind } from './socket-io-topics.js';
import { CHANNEL, SocketIoUpstream } from './socket-io-upstream.js';

/** The upstream's path (socket.io's default): engine.io answers everything under it. */
export const SOCKET_IO_PATH = '/socket.io/';
/**
 * The upstream's heartbeat (STACKS_API_WS_PING_INTERVAL and _TIMEOUT, 5 s each by default):
 * a client that answers no ping within 10 s is closed, by the upstream and by the proxy alike.
 */
const PING_INTERVAL_MS = 5_000;
const PING_TIMEOUT_MS = 5_000;
/** How long the upstream has to acknowledge a `subscribe` (and to open its connection). */
const UPSTREAM_ACK_TIMEOUT_MS = 10_000;
/**
 * The socket.io client bundle the upstream serves under its path (socket.io's serveClient):
 * not an engine.io request, so the pipeline goes on (the passthrough fetches the upstream's).
 */
const CLIENT_FILES = new Set([
  'socket.io.esm.min.js',
  'socket.io.esm.min.js.map',
  'socket.io.js',
  'socket.io.js.map',
  'socket.io.min.js',
  'socket.io.min.js.map',
  'socket.io.msgpack.min.js',
  'socket.io.msgpack.min.js.map',
]);

export const subscriptionLimitMessage = (max: number): string => `Too many subscriptions: at most ${max} per client`;
export const topicTooLongMessage = (max: number): string => `Topic too long: at most ${max} characters`;
export const PROXY_ROOMS_FULL_MESSAGE = 'Subscription refused: this proxy holds as many topics as it may';
const CLIENTS_FULL_MESSAGE = 'Too many WebSocket clients on this proxy, try again later';

export interface SocketIoFanoutOptions {
  fanout: LiveSettings['fanout'];
  /** live.push.reconnectMinMs / reconnectMaxMs: the upstream connection's reconnect delays. */
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** live.push.pingIntervalMs: how long a connection must stay up for the next drop to start the backoff again. */
  stayedUpMs: number;
  /** Client slots shared with the JSON-RPC fan-out (live.fanout.maxClients for both). */
  slots: ClientSlots;
  /** The upstream to connect to (health.preferredOrigin()). */
  origin: () => string;
  /** The operator's headers for an upstream (upstreamHeadersFor). */
  operatorHeaders: (origin: string) => Readonly<Record<string, string>>;
  telemetry: Telemetry;
  logger: Logger;
  clock?: Clock;
}

export interface SocketIoFanout {
  /** For upgrade requests on /socket.io/, after the router's target decision and admission. */
  upgrade(req: IncomingMessage, socket: NetSocket, head: Buffer): void;
  /** The polling transport: answers a request under /socket.io/ and returns true, or returns false. */
  handleRequest(req: IncomingMessage, res: ServerResponse): boolean;
  /** Closes every client and the upstream connection. */
  close(): Promise<void>;
  /** The upstream connection, for tests and /metrics. */
  readonly upstream: Pick<SocketIoUpstream, 'opened' | 'reconnects' | 'connected' | 'rooms'>;
}

/** Per client (engine.io connection): bytes handed to the engine since its last flush. */
interface ConnectionState {
  queuedBytes: number;
  dropped: boolean;
}

/** Per Socket.IO socket: the rooms it holds (each one held upstream once for it). */
interface SocketState {
  rooms: Set<string>;
}

const pathOf = (url: string): string => {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
};

/** A request that opens a new engine.io session (no `sid`): it would take a client slot. */
const isHandshake = (url: string): boolean => {
  const query = url.indexOf('?');
  return query < 0 || !new URLSearchParams(url.slice(query + 1)).has('sid');
};

/** Bytes the WebSocket (if that is the transport) has accepted and not yet written. */
function transportBufferedBytes(conn: EngineSocket): number {
  const ws = (conn.transport as { socket?: { bufferedAmount?: unknown } }).socket;
  return typeof ws?.bufferedAmount === 'number' ? ws.bufferedAmount : 0;
}

export function createSocketIoFanout(options: SocketIoFanoutOptions): SocketIoFanout {
  const { fanout, slots, telemetry, logger } = options;
  const clock = options.clock ?? systemClock;
  const upstream = new SocketIoUpstream({
    origin: options.origin,
    headers: options.operatorHeaders,
    reconnectMinMs: options.reconnectMinMs,
    reconnectMaxMs: options.reconnectMaxMs,
    stayedUpMs: options.stayedUpMs,
    ackTimeoutMs: UPSTREAM_ACK_TIMEOUT_MS,
    maxRooms: fanout.maxUpstreamSubscriptions,
    telemetry,
    logger,
  });
  // The upstream's options (socket-io-channel.ts): cors '*', its heartbeat; the rest socket.io's defaults.
  const engine = new EngineServer({ pingInterval: PING_INTERVAL_MS, pingTimeout: PING_TIMEOUT_MS, cors: { origin: '*' } });
  const connections = new Map<EngineSocket, ConnectionState>();
  let closing = false;

  // Before socket.io's own listener: a client over the slots is closed before anything else.
  engine.on('connection', (conn: EngineSocket) => {
    if (closing || !slots.take()) {
      telemetry.wsClientDropped(CHANNEL, 'clients');
      conn.close(true);
      return;
    }
    const state: ConnectionState = { queuedBytes: 0, dropped: false };
    connections.set(conn, state);
    telemetry.wsClientConnected(CHANNEL);
    const rate = new MessageRate(fanout.maxMessagesPerSecondPerClient, clock());
    // The message that crosses the rate is not acted on either: socket.io has decoded it by now
    // (it reads the engine's 'data', emitted just before 'message') but dispatches an event to
    // the socket's handlers a tick later, and only while the socket is connected; drop() closes
    // the engine connection synchronously, which disconnects the socket before that tick.
    conn.on('message', () => {
      telemetry.wsMessage(CHANNEL, 'in');
      if (!rate.admit(clock())) drop(conn, state, 'rate');
    });
    conn.on('drain', () => (state.queuedBytes = 0));
    conn.once('close', () => {
      connections.delete(conn);
      slots.release();
      telemetry.wsClientClosed(CHANNEL);
    });
  });

  const io = new SocketIoServer({ serveClient: false });
  io.bind(engine);
  const main = io.of('/');

  /** Closes a client at once (its buffered bytes discarded); counted once. */
  function drop(conn: EngineSocket, state: ConnectionState, reason: 'slow' | 'rate'): void {
    if (state.dropped) return;
    state.dropped = true;
    telemetry.wsClientDropped(CHANNEL, reason);
    conn.close(true);
    // A slow WebSocket client would keep its unread bytes until the closing handshake times out.
    const ws = (conn.transport as { socket?: { terminate?: () => void } }).socket;
    ws?.terminate?.();
  }

  function deliver(room: string, packet: string, bytes: number): void {
    const members = main.adapter.rooms.get(room);
    if (!members) return;
    for (const id of members) {
      const conn = main.sockets.get(id)?.conn;
      const state = conn && connections.get(conn);
      if (!conn || !state || state.dropped) continue;
      // Judged on what is already waiting: a client holds at most the limit plus one event.
      if (tooSlow(state.queuedBytes + transportBufferedBytes(conn), fanout.maxBufferedBytesPerClient)) {
        drop(conn, state, 'slow');
        continue;
      }
      state.queuedBytes += bytes;
      // The packet's text as the upstream sent it: the engine frames it exactly as the upstream's did.
      conn.write(packet);
      telemetry.wsMessage(CHANNEL, 'out');
    }
  }
  upstream.onEvent((room, packet) => deliver(room, packet, Buffer.byteLength(packet)));

  const stateOf = (socket: Socket): SocketState => socket.data as SocketState;

  /**
   * Why `rooms` cannot be joined, if they cannot: a topic over MAX_TOPIC_LENGTH, or rooms not held
   * by this socket yet over its limit or over the proxy's. Counted as a drop with its reason.
   */
  function refusal(socket: Socket, rooms: readonly string[]): string | undefined {
    if (rooms.some((room) => room.length > MAX_TOPIC_LENGTH)) {
      telemetry.wsClientDropped(CHANNEL, 'topic_length');
      return topicTooLongMessage(MAX_TOPIC_LENGTH);
    }
    const held = stateOf(socket).rooms;
    const fresh = new Set(rooms.filter((room) => !held.has(room)));
    let refused: string | undefined;
    if (held.size + fresh.size > fanout.maxSubscriptionsPerClient) refused = subscriptionLimitMessage(fanout.maxSubscriptionsPerClient);
    else {
      let newUpstream = 0;
      for (const room of fresh) if (!upstream.holds(room)) newUpstream += 1;
      if (upstream.rooms + newUpstream > fanout.maxUpstreamSubscriptions) refused = PROXY_ROOMS_FULL_MESSAGE;
    }
    if (refused) telemetry.wsClientDropped(CHANNEL, 'subscriptions');
    return refused;
  }

  /** Joins `rooms` here and holds each upstream; settles when the upstream acknowledged them. */
  function join(socket: Socket, rooms: readonly string[]): Promise<unknown> {
    const held = stateOf(socket).rooms;
    const acknowledged: Promise<void>[] = [];
    for (const room of rooms) {
      if (held.has(room)) continue;
      const hold = upstream.hold(room);
      if (typeof hold === 'string') continue; // refused: checked by refusal() just before
      held.add(room);
      acknowledged.push(hold);
      telemetry.wsSubscriptionsChanged(CHANNEL, topicKind(room), 1);
    }
    void socket.join([...rooms].filter((room) => held.has(room)));
    return Promise.all(acknowledged);
  }

  function leave(socket: Socket, room: string): void {
    const held = stateOf(socket).rooms;
    if (!held.delete(room)) return;
    void socket.leave(room);
    upstream.release(room);
    telemetry.wsSubscriptionsChanged(CHANNEL, topicKind(room), -1);
  }

  // The handshake's topics, checked as the upstream does (its io.use); then the proxy's limits.
  main.use((socket, next) => {
    socket.data = { rooms: new Set<string>() } satisfies SocketState;
    const topics = handshakeTopics(socket.handshake.query.subscriptions);
    if (!topics) return next();
    const check = checkTopics(topics);
    if (check.kind === 'invalid') return next(new Error(invalidTopicMessage(check.topics)));
    if (check.kind === 'unreadable') return next(new Error(invalidTopicMessage([])));
    const refused = refusal(socket, check.rooms);
    if (refused) return next(new Error(refused));
    next();
  });

  main.on('connection', (socket: Socket) => {
    const topics = handshakeTopics(socket.handshake.query.subscriptions);
    if (topics) void join(socket, topics);
    socket.on('subscribe', (topic: unknown, callback: unknown) => {
      const check = checkTopics(topic);
      // As the upstream: an invalid or unreadable topic is neither joined nor acknowledged.
      if (check.kind !== 'valid') return;
      const ack = typeof callback === 'function' ? (callback as (error: string | null) => void) : undefined;
      const refused = refusal(socket, check.rooms);
      if (refused) {
        ack?.(refused);
        return;
      }
      void join(socket, check.rooms).then(() => {
        if (socket.connected) ack?.(null);
      });
    });
    // The upstream leaves each named room and acknowledges nothing.
    socket.on('unsubscribe', (...topics: unknown[]) => {
      for (const topic of topics) if (typeof topic === 'string') leave(socket, topic);
    });
    socket.on('disconnecting', () => {
      for (const room of [...stateOf(socket).rooms]) leave(socket, room);
    });
  });

  const refuseFull = (): boolean => {
    if (!slots.take()) return true;
    slots.release();
    return false;
  };

  return {
    upgrade(req, socket, head) {
      if (closing || (isHandshake(req.url ?? '') && refuseFull())) {
        telemetry.wsClientDropped(CHANNEL, 'clients');
        sendSocketError(socket, unavailable(CLIENTS_FULL_MESSAGE));
        return;
      }
      engine.handleUpgrade(req, socket, head);
    },
    handleRequest(req, res) {
      const url = req.url ?? '/';
      const path = pathOf(url);
      if (!path.startsWith(SOCKET_IO_PATH) || CLIENT_FILES.has(path.slice(SOCKET_IO_PATH.length))) return false;
      if (closing || (isHandshake(url) && refuseFull())) {
        telemetry.wsClientDropped(CHANNEL, 'clients');
        sendError(res, unavailable(CLIENTS_FULL_MESSAGE), 'NONE');
        return true;
      }
      engine.handleRequest(req, res);
      return true;
    },
    async close() {
      closing = true;
      await upstream.close();
      await io.close();
    },
    upstream,
  };
}
