/**
 * Everything the proxy does not answer itself (other /extended routes, /v2 node RPC
 * including POST /v2/transactions, WebSockets on /extended/v1/ws and /socket.io/) goes to
 * the preferred upstream unchanged and uncached, so switching a base URL breaks nothing.
 * http-proxy-middleware is used as a plain (req, res, next) function: no framework needed.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { failureReply } from '../errors.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { sendError } from './respond.js';

export interface PassthroughOptions {
  /** The upstream to use for this request (the healthiest, chosen per request). */
  target: () => string;
  websockets: boolean;
  timeoutMs: number;
  telemetry: Telemetry;
}

export interface Passthrough {
  /** Sends the request on and its answer back (with X-Cache: BYPASS), or a 502 when it fails. */
  forward(req: IncomingMessage, res: ServerResponse): void;
  /** The server's 'upgrade' listener: WebSockets go on to the same upstream. */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
}

// When each proxied request left, and for which upstream, for the upstream latency metric.
const sentAt = new WeakMap<IncomingMessage, { upstream: string; started: bigint }>();

function answerFailure(res: ServerResponse): void {
  if (res.headersSent) res.destroy();
  else sendError(res, failureReply('passthrough'), 'BYPASS');
}

export function createPassthrough(options: PassthroughOptions): Passthrough {
  const middleware = createProxyMiddleware<IncomingMessage, ServerResponse>({
    target: options.target(),
    router: () => options.target(),
    changeOrigin: true,
    xfwd: true,
    ws: options.websockets,
    proxyTimeout: options.timeoutMs,
    on: {
      proxyReq: (_proxyReq, req, _res, proxyOptions) => {
        // The target the router chose for this request (a URL object or string).
        const target = proxyOptions.target;
        const upstream = typeof target === 'string' ? new URL(target).origin : target instanceof URL ? target.origin : options.target();
        sentAt.set(req, { upstream, started: process.hrtime.bigint() });
      },
      error: (error, req, resOrSocket) => {
        options.telemetry.passthroughFailed(sentAt.get(req)?.upstream ?? options.target(), error);
        if ('writeHead' in resOrSocket) answerFailure(resOrSocket as ServerResponse);
        else (resOrSocket as Socket).destroy();
      },
      proxyRes: (proxyRes, req, res) => {
        res.setHeader('x-cache', 'BYPASS');
        const sent = sentAt.get(req);
        if (sent) {
          const seconds = Number(process.hrtime.bigint() - sent.started) / 1e9;
          options.telemetry.passthroughAnswered(sent.upstream, proxyRes.statusCode ?? 0, seconds);
        }
      },
    },
  });
  return {
    forward: (req, res) => {
      // The middleware calls next(error) after a failure it has already answered through the
      // 'error' listener above, and also when it could not pick a target, which it has not.
      void middleware(req, res, () => {
        if (!res.headersSent) answerFailure(res);
      });
    },
    upgrade: middleware.upgrade,
  };
}
