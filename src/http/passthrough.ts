/**
 * The upstream's public API outside the 13 routes (other /extended routes, /v2 node RPC
 * including POST /v2/transactions, WebSockets on /extended/v1/ws and /socket.io/) goes to
 * the preferred upstream uncached, so switching a base URL breaks nothing. Only allowed paths
 * go (forward-policy.ts), with the path the pipeline decided (request-target.ts) byte for
 * byte and an allow-listed set of the client's headers plus the operator's.
 * HTTP requests go through undici, which frames them strictly (passthrough-forward.ts);
 * WebSocket upgrades through http-proxy-middleware's upgrade path, used as a plain function.
 */
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { MAX_BROADCAST_BODY_BYTES } from '../chain/broadcast-principals.js';
import { badUrl, failureReply, routeNotFound, type ErrorReply } from '../errors.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { classifyTransportError } from '../upstream/errors.js';
import type { PassthroughClient } from '../upstream/passthrough-client.js';
import { isAllowedPath, upstreamRequestHeaders } from './forward-policy.js';
import { createHttpForwarder } from './passthrough-forward.js';
import { captureBody, type CaptureBudget } from './broadcast-capture.js';
import { requestIdOf } from './request-log.js';
import { decideTarget } from './request-target.js';
import { sendSocketError } from './respond.js';
import { admitLocalUpgradeAnswer, admitUpgrade, type UpgradeRefusal } from './client-admission.js';

export interface PassthroughOptions {
  /** The upstream to use for this request (the healthiest, chosen per request). */
  target: () => string;
  /** Path prefixes forwarded (passthrough.allowedPrefixes). */
  allowedPrefixes: readonly string[];
  websockets: boolean;
  /** Paths WebSocket upgrades are forwarded on (passthrough.websocketPrefixes). */
  websocketPrefixes: readonly string[];
  /** From an upgrade request to the upstream's 101; later, a 504 and the connection closes. */
  websocketHandshakeTimeoutMs: number;
  /** A tunnel with no bytes either way for this long is closed on both sides. */
  websocketIdleTimeoutMs: number;
  /** Idle limit of an upgrade request's upstream socket before its 101. */
  timeoutMs: number;
  /** The HTTP transport (undici pools of their own). */
  client: PassthroughClient;
  /** The total deadline of an HTTP answer, head and body (passthrough.answerDeadlineMs). */
  answerDeadlineMs: number;
  telemetry: Telemetry;
  /** The operator's headers for an upstream (its API key, configured headers); none by default. */
  operatorHeaders?: (origin: string) => Readonly<Record<string, string>>;
  /** With rate limiting on: upgrades are admitted and charged a miss (client-admission.ts). */
  rateLimiter?: RateLimiter;
  /** Told of every POST /v2/transactions and its outcome (broadcast-observer.ts); none: not observed. */
  broadcasts?: BroadcastSink;
  /** The process-wide budget for broadcast bodies held to decode (activity.broadcastCaptureBudgetBytes); required with `broadcasts`. */
  captureBudget?: CaptureBudget;
}

/** Where an observed broadcast goes: the body the client sent (undefined: over the bound or cut short) and the upstream's status. */
export interface BroadcastSink {
  /** A promise returned holds the client's answer back until it settles (bounded): the other instances are told first. */
  observe(body: Buffer | undefined, contentType: string | undefined, status: number | undefined): void | Promise<void>;
}

/** The path broadcasts are sent to (stacks-core RPC, proxied by the upstream's API). */
const BROADCAST_PATH = '/v2/transactions';

export interface Passthrough {
  /** Whether a decided path may be forwarded at all. */
  allows(path: string): boolean;
  /**
   * Sends the request on and its answer back (with X-Cache: BYPASS), or a 502/504 when it fails;
   * `answerHeaders` (a name-value list: the request id, ratelimit-*) go on either answer.
   */
  forward(req: IncomingMessage, res: ServerResponse, requestId: string, answerHeaders?: readonly string[]): void;
  /** The server's 'upgrade' listener: WebSockets on their paths go on to the same upstream. */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
}

const NO_OPERATOR_HEADERS = (): Readonly<Record<string, string>> => ({});

export function createPassthrough(options: PassthroughOptions): Passthrough {
  const operatorHeaders = options.operatorHeaders ?? NO_OPERATOR_HEADERS;
  const forwardHttp = createHttpForwarder(options);
  // The upstream chosen for each upgrade, once: its credentials and its address must agree.
  const chosen = new WeakMap<IncomingMessage, string>();
  // Upgrade sockets that have had their answer (a 101, or an error written by the proxy).
  const settled = new WeakSet<Socket>();
  const upstreamOf = (req: IncomingMessage): string => chosen.get(req) ?? options.target();

  /** The upstream for this request, and the headers it gets there. */
  const prepare = (req: IncomingMessage, requestId: string, upgrade: boolean): { origin: string; headers: Record<string, string> } => {
    const origin = options.target();
    const headers = upstreamRequestHeaders(req.headers, {
      requestId,
      clientAddress: req.socket.remoteAddress,
      upgrade,
      operatorHeaders: operatorHeaders(origin),
    });
    return { origin, headers };
  };

  /** An upgrade that gets no tunnel: an HTTP answer in the upstream's shape, and the connection closes. */
  const failSocket = (socket: Socket, reply: ErrorReply, headers: readonly string[] = []): void => {
    if (settled.has(socket) || !socket.writable) {
      socket.destroy();
      return;
    }
    settled.add(socket);
    sendSocketError(socket, reply, headers);
  };

  const watchWebSocket = (proxyReq: ClientRequest, socket: Socket): void => {
    const handshake = setTimeout(() => {
      failSocket(socket, failureReply('timeout'));
      proxyReq.destroy();
    }, options.websocketHandshakeTimeoutMs);
    handshake.unref();
    const stop = (): void => clearTimeout(handshake);
    proxyReq.once('response', stop);
    proxyReq.once('error', stop);
    proxyReq.once('close', stop);
    proxyReq.once('upgrade', (_res: IncomingMessage, upstreamSocket: Socket) => {
      stop();
      settled.add(socket);
      // Either side closing ends the tunnel; silence in both directions closes it too.
      socket.setTimeout(options.websocketIdleTimeoutMs, () => socket.destroy());
      socket.once('close', () => upstreamSocket.destroy());
      upstreamSocket.once('close', () => socket.destroy());
    });
  };

  // Only its upgrade path is used: HTTP requests go through forwardHttp.
  const middleware = createProxyMiddleware<IncomingMessage, ServerResponse>({
    target: options.target(),
    router: (req) => upstreamOf(req),
    changeOrigin: true,
    // X-Forwarded-* come from forward-policy.ts, which appends to the client's chain.
    xfwd: false,
    // Upgrades reach the middleware only through upgrade() below: with `ws: true` it would
    // subscribe to the server's 'upgrade' event itself and forward every path.
    ws: false,
    proxyTimeout: options.timeoutMs,
    on: {
      proxyReqWs: (proxyReq, _req, socket) => watchWebSocket(proxyReq, socket as Socket),
      error: (error, req, socket) => {
        const origin = upstreamOf(req);
        options.telemetry.passthroughFailed(origin, classifyTransportError(error, origin));
        failSocket(socket as Socket, failureReply('passthrough'));
      },
    },
  });

  return {
    allows: (path) => isAllowedPath(path, options.allowedPrefixes),
    forward: (req, res, requestId, answerHeaders = []) => {
      const { origin, headers } = prepare(req, requestId, false);
      const sink = options.broadcasts;
      const budget = options.captureBudget;
      if (!sink || !budget || req.method !== 'POST' || pathOf(req.url) !== BROADCAST_PATH) {
        forwardHttp(req, res, origin, headers, answerHeaders);
        return;
      }
      // Only broadcasts are observed: every other request goes on exactly as before.
      let captured: Buffer | undefined;
      forwardHttp(req, res, origin, headers, answerHeaders, (status) => sink.observe(req.complete ? captured : undefined, req.headers['content-type'], status));
      captureBody(
        req,
        MAX_BROADCAST_BODY_BYTES,
        budget,
        (body) => (captured = body),
        () => options.telemetry.broadcastCaptureOverBudget(),
      );
    },
    upgrade: (req, socket, head) => {
      const limiter = options.rateLimiter;
      // With limits on, an upgrade answered here is charged as any local answer first.
      const answerLocally = (reply: ErrorReply): void => {
        if (!limiter) return failSocket(socket, reply);
        const answer = admitLocalUpgradeAnswer(limiter, options.telemetry, req, reply);
        if (answer instanceof Promise) void answer.then((settled) => failSocket(socket, settled.reply, settled.headers));
        else failSocket(socket, answer.reply, answer.headers);
      };
      const target = decideTarget(req.url ?? '');
      if (target.kind === 'refused') return answerLocally(badUrl(target.path));
      req.url = target.url;
      if (!options.websockets || !isAllowedPath(target.path, options.websocketPrefixes)) {
        return answerLocally(routeNotFound(req.method ?? 'GET', target.url));
      }
      const open = (refusal: UpgradeRefusal): void => {
        if (refusal) return failSocket(socket, refusal.reply, refusal.headers);
        // The client may have gone while a shared budget answered.
        if (socket.destroyed) return;
        const { origin, headers } = prepare(req, requestIdOf(req), true);
        chosen.set(req, origin);
        // http-proxy-middleware copies req.headers onto the upstream request: replace them with the allowed set.
        req.headers = headers;
        middleware.upgrade(req, socket, head);
      };
      if (!limiter) return open(null);
      const admitted = admitUpgrade(limiter, options.telemetry, req);
      if (admitted instanceof Promise) void admitted.then(open);
      else open(admitted);
    },
  };
}

const pathOf = (url: string | undefined): string => {
  const target = url ?? '/';
  const query = target.indexOf('?');
  return query < 0 ? target : target.slice(0, query);
};
