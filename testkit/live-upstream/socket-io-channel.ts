/**
 * The upstream's Socket.IO channel (stacks-blockchain-api src/api/routes/ws/channels/
 * socket-io-channel.ts), served by the fake upstream on `/socket.io/` when a test attaches it
 * (without it the fake echoes WebSockets there, as passthrough tests expect): a real socket.io
 * Server with the upstream's options, its handshake `subscriptions` check and refusal
 * (`Invalid topic: …`), `subscribe` (acknowledged with null when valid, not at all otherwise),
 * `unsubscribe` (never acknowledged) and its emits (event name = room name).
 *
 * The topic check is written here again from the upstream's source, apart from the proxy's
 * (src/live/socket-io-topics.ts), so that tests compare the proxy against the upstream's rules
 * and not against themselves. Tests publish events, count connections and drop them all.
 */
import type { IncomingMessage } from 'node:http';
import { Server as EngineServer } from 'engine.io';
import { Server as SocketIoServer, type Socket } from 'socket.io';
import { isValidPrincipal } from '../../src/routes/handler-checks.js';
import type { FakeUpstream } from '../fake-upstream/types.js';

export interface FakeSocketIoChannel {
  /** Emits to `room` with the room as the event name, as the upstream's send() does. */
  publish(room: string, ...args: unknown[]): void;
  /** Socket.IO connections open now. */
  readonly connections: number;
  /** Socket.IO connections ever accepted (handshakes refused not counted). */
  readonly connectionsEver: number;
  /** Sockets in `room` now. */
  roomSize(room: string): number;
  /** Every `subscribe` argument received (valid or not), in order. */
  readonly subscribes: unknown[];
  /** The request headers of every accepted connection's handshake, in order. */
  readonly handshakeHeaders: IncomingMessage['headers'][];
  /** Drops every connection at the transport (no Socket.IO disconnect packet), as a network fault would. */
  dropAll(): void;
  /** Detaches from the fake (the echo answers again) and closes every connection. */
  close(): Promise<void>;
}

/** The upstream's defaults (STACKS_API_WS_PING_INTERVAL / _TIMEOUT: 5 s each). */
const PING_MS = 5_000;

/** validateRequestHexInput: "0x", an even number of digits, hex digits only. */
const isValidTxId = (value: string): boolean => /^0x([0-9a-fA-F]{2})*$/.test(value);

/** The upstream's isSubValid: undefined when valid, else the topic (throws for a non-string, as it does). */
function isSubValid(sub: string): string | undefined {
  if (sub.includes(':')) {
    const parts = sub.split(':');
    const txOrAddr = parts[0];
    const value = parts[1] ?? '';
    switch (txOrAddr) {
      case 'address-transaction':
      case 'address-stx-balance':
        return isValidPrincipal(value) ? undefined : sub;
      case 'transaction':
        return isValidTxId(value) ? undefined : sub;
      case 'nft-asset-event': {
        const [assetIdentifier = '', token] = sub.substring(16).split('+');
        const [contractId = '', tokenClass] = assetIdentifier.split('::');
        return token && tokenClass && isValidPrincipal(contractId) ? undefined : sub;
      }
      case 'nft-collection-event': {
        const [contractId = '', tokenClass] = sub.substring(21).split('::');
        return tokenClass && isValidPrincipal(contractId) ? undefined : sub;
      }
      default:
        return sub;
    }
  }
  switch (sub) {
    case 'block':
    case 'mempool':
    case 'microblock':
    case 'nft-event':
      return undefined;
    default:
      return sub;
  }
}

/** The upstream's getInvalidSubscriptionTopics. */
export function invalidTopics(subscriptions: unknown): string[] | undefined {
  if (!Array.isArray(subscriptions)) {
    const invalid = isSubValid(subscriptions as string);
    return invalid ? [invalid] : undefined;
  }
  const invalid = (subscriptions as string[]).map(isSubValid).filter((sub): sub is string => typeof sub === 'string');
  return invalid.length === 0 ? undefined : invalid;
}

const queryTopics = (subscriptions: unknown): string[] => [subscriptions].flat().flatMap((r) => String(r).split(','));

export function attachSocketIoChannel(fake: FakeUpstream): FakeSocketIoChannel {
  const engine = new EngineServer({ pingInterval: PING_MS, pingTimeout: PING_MS, cors: { origin: '*' } });
  const io = new SocketIoServer({ serveClient: false });
  io.bind(engine);
  let connectionsEver = 0;
  const handshakeHeaders: IncomingMessage['headers'][] = [];
  const subscribes: unknown[] = [];

  io.use((socket, next) => {
    const subscriptions = socket.handshake.query.subscriptions;
    if (!subscriptions) return next();
    const invalid = invalidTopics(queryTopics(subscriptions));
    if (invalid) next(new Error(`Invalid topic: ${invalid.join(', ')}`));
    else next();
  });

  io.on('connection', (socket: Socket) => {
    connectionsEver += 1;
    handshakeHeaders.push({ ...socket.handshake.headers });
    const subscriptions = socket.handshake.query.subscriptions;
    if (subscriptions) void socket.join(queryTopics(subscriptions));
    socket.on('subscribe', (topic: unknown, callback: unknown) => {
      subscribes.push(topic);
      // The upstream's check throws on a non-string: nothing joined, nothing acknowledged.
      let invalid: string[] | undefined;
      try {
        invalid = invalidTopics(topic);
      } catch {
        return;
      }
      if (invalid) return;
      void socket.join(topic as string | string[]);
      if (typeof callback === 'function') (callback as (error: null) => void)(null);
    });
    socket.on('unsubscribe', (...topics: unknown[]) => {
      for (const topic of topics) if (typeof topic === 'string') void socket.leave(topic);
    });
  });

  const detach = fake.attach({
    prefix: '/socket.io/',
    request: (req, res) => engine.handleRequest(req as never, res),
    upgrade: (req, socket, head) => engine.handleUpgrade(req as never, socket as never, head),
  });

  return {
    publish: (room, ...args) => void io.to(room).emit(room, ...args),
    get connections() {
      return io.of('/').sockets.size;
    },
    get connectionsEver() {
      return connectionsEver;
    },
    roomSize: (room) => io.of('/').adapter.rooms.get(room)?.size ?? 0,
    handshakeHeaders,
    subscribes,
    dropAll() {
      for (const socket of io.of('/').sockets.values()) {
        const ws = (socket.conn.transport as { socket?: { terminate?: () => void } }).socket;
        if (ws?.terminate) ws.terminate();
        else socket.conn.close();
      }
    },
    async close() {
      detach();
      await io.close();
    },
  };
}
