/**
 * Everything the proxy does not answer itself (other /extended routes, /v2 node RPC
 * including POST /v2/transactions, WebSockets on /extended/v1/ws and /socket.io/) goes to
 * the preferred upstream unchanged and uncached, so switching a base URL breaks nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware, type RequestHandler } from 'http-proxy-middleware';
import { badGateway } from '../errors.js';
import type { Logger } from '../logger.js';
import { sendError } from '../http/respond.js';

export interface PassthroughOptions {
  /** The upstream to use for this request (the healthiest, chosen per request). */
  target: () => string;
  websockets: boolean;
  timeoutMs: number;
  logger: Logger;
}

export type Passthrough = RequestHandler<IncomingMessage, ServerResponse>;

export function createPassthrough(options: PassthroughOptions): Passthrough {
  return createProxyMiddleware<IncomingMessage, ServerResponse>({
    target: options.target(),
    router: () => options.target(),
    changeOrigin: true,
    xfwd: true,
    ws: options.websockets,
    proxyTimeout: options.timeoutMs,
    on: {
      error: (error, _req, resOrSocket) => {
        options.logger.warn({ err: error.message }, 'passthrough to upstream failed');
        if ('writeHead' in resOrSocket) {
          const res = resOrSocket as ServerResponse;
          if (!res.headersSent) sendError(res, badGateway('The upstream API is unavailable'), 'BYPASS');
          else res.destroy();
        } else {
          (resOrSocket as Socket).destroy();
        }
      },
      proxyRes: (_proxyRes, _req, res) => {
        res.setHeader('x-cache', 'BYPASS');
      },
    },
  });
}
