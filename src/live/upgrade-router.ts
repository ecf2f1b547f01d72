/**
 * Where a WebSocket upgrade goes when the fan-out is on: `/extended/v1/ws…` (the upstream's own
 * prefix match) to the JSON-RPC fan-out, `/socket.io/…` to the Socket.IO fan-out, anything else
 * (and a channel without a listener) to the fallback, the passthrough's upgrade, which answers
 * as it does today. A fanned-out upgrade gets what a tunnelled one gets first: the same
 * request-target decision (request-target.ts), the same rate-limit admission and miss charge
 * (client-admission.ts admitUpgrade), and then a client slot (ClientSlots, shared by both
 * channels): when every slot is held, a 503 in the upstream's error shape, and the socket closes.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { badUrl, routeNotFound, unavailable, type ErrorReply } from '../errors.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { admitLocalUpgradeAnswer, admitUpgrade, type UpgradeRefusal } from '../http/client-admission.js';
import { decideTarget } from '../http/request-target.js';
import { sendSocketError } from '../http/respond.js';
import type { UpgradeListener } from '../http/server-lifecycle.js';
import type { ClientSlots } from './client-bounds.js';

export interface UpgradeRouterOptions {
  /** The JSON-RPC fan-out (ws-rpc-fanout.ts); absent: its upgrades go to the fallback. */
  rpc?: UpgradeListener;
  /**
   * The Socket.IO fan-out; absent: its upgrades go to the fallback. It takes its client slots
   * itself, one per Engine.IO session: a polling client never upgrades, and the upgrade of a
   * session that already holds one must not take a second.
   */
  socketIo?: UpgradeListener;
  /** Every other upgrade (the passthrough's); absent: a 404 in the upstream's shape. */
  fallback?: UpgradeListener;
  /** WebSocket and Socket.IO clients held at once (live.fanout.maxClients). */
  slots: ClientSlots;
  rateLimiter?: RateLimiter;
  telemetry: Telemetry;
}

/** The upstream's JSON-RPC channel takes any upgrade whose URL starts with its path. */
const RPC_PREFIX = '/extended/v1/ws';
/** Engine.IO's default path (with its trailing slash, as it matches). */
const SOCKET_IO_PREFIX = '/socket.io/';

export const CLIENTS_FULL_MESSAGE = 'The proxy holds as many WebSocket clients as it may (live.fanout.maxClients); retry shortly';

export function createUpgradeRouter(options: UpgradeRouterOptions): UpgradeListener {
  const limiter = options.rateLimiter;

  /** An answer of the proxy's own, charged as any local answer when limits are on. */
  const answerLocally = (req: IncomingMessage, socket: Socket, reply: ErrorReply): void => {
    if (!limiter) return sendSocketError(socket, reply);
    const answer = admitLocalUpgradeAnswer(limiter, options.telemetry, req, reply);
    if (answer instanceof Promise) void answer.then((settled) => sendSocketError(socket, settled.reply, settled.headers));
    else sendSocketError(socket, answer.reply, answer.headers);
  };

  /** Admission, then (for the JSON-RPC channel) a slot held until the socket closes, then the channel's listener. */
  const admitTo = ({ listener, takesSlot }: Channel, req: IncomingMessage, socket: Socket, head: Buffer): void => {
    const open = (refusal: UpgradeRefusal): void => {
      if (refusal) return sendSocketError(socket, refusal.reply, refusal.headers);
      // The client may have gone while a shared budget answered.
      if (socket.destroyed) return;
      if (takesSlot) {
        if (!options.slots.take()) return sendSocketError(socket, unavailable(CLIENTS_FULL_MESSAGE), ['retry-after', '1']);
        socket.once('close', () => options.slots.release());
      }
      listener(req, socket, head);
    };
    if (!limiter) return open(null);
    const admitted = admitUpgrade(limiter, options.telemetry, req);
    if (admitted instanceof Promise) void admitted.then(open);
    else open(admitted);
  };

  return (req, socket, head) => {
    const target = decideTarget(req.url ?? '');
    const channel = target.kind === 'target' ? channelOf(target.path, options) : undefined;
    if (target.kind === 'refused' || !channel) {
      if (options.fallback) return options.fallback(req, socket, head);
      return answerLocally(req, socket, target.kind === 'refused' ? badUrl(target.path) : routeNotFound(req.method ?? 'GET', target.url));
    }
    req.url = target.url;
    admitTo(channel, req, socket, head);
  };
}

interface Channel {
  listener: UpgradeListener;
  /** Whether the router takes the client's slot (the Socket.IO fan-out takes its own). */
  takesSlot: boolean;
}

function channelOf(path: string, options: UpgradeRouterOptions): Channel | undefined {
  if (path.startsWith(RPC_PREFIX)) return options.rpc && { listener: options.rpc, takesSlot: true };
  if (path.startsWith(SOCKET_IO_PREFIX)) return options.socketIo && { listener: options.socketIo, takesSlot: false };
  return undefined;
}
