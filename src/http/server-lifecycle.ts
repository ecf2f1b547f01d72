/**
 * The HTTP server's life: listen with bounded connections (a deadline for a request's head and
 * for the whole request, bounded pipelining, no interim 100 on requests without content),
 * keep track of upgraded (WebSocket) connections, and close gracefully: stop accepting, let
 * in-flight requests finish within a grace period, then end whatever is left.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { routeNotFound } from '../errors.js';
import { boundPipelining } from './pipelining.js';
import { sendSocketError } from './respond.js';

export type UpgradeListener = (req: IncomingMessage, socket: Socket, head: Buffer) => void;

export interface HttpServerOptions {
  port: number;
  host: string;
  requestTimeoutMs: number;
  /** How long a client may take to send a request's head (an upgrade request's too). */
  headersTimeoutMs: number;
  /** Requests one connection may have in flight; later pipelined ones wait (pipelining.ts). */
  maxPipelinedRequests: number;
  /** How long in-flight requests get to finish once closing starts. */
  shutdownGraceMs: number;
  /** Where upgrade requests go; without one, each gets the upstream's 404 and the socket closes. */
  upgrade?: UpgradeListener;
}

export interface RunningServer {
  server: Server;
  /** A URL clients on this machine can use (a wildcard host becomes 127.0.0.1). */
  url: string;
  /** The address as configured (http://0.0.0.0:8080 when bound to every interface), for logs. */
  boundUrl: string;
  port: number;
  /** Stops accepting and resolves once every connection has ended. */
  close(): Promise<void>;
}

// Idle keep-alive connections are closed this often while draining: each becomes idle when
// its last request finishes, and Node only closes the ones idle at the moment it is asked.
const IDLE_SWEEP_MS = 50;

// How often node:http checks the head and request deadlines (its default, 30 s, would let a
// client that never finishes its head live half a minute past headersTimeoutMs).
const DEADLINE_CHECK_MS = 1000;

/** The upgrade answer where nothing takes upgrades: the upstream's 404, and the socket closed. */
export const refuseUpgrade: UpgradeListener = (req, socket) => sendSocketError(socket, routeNotFound(req.method ?? 'GET', req.url ?? ''));

/** Whether the request's framing announces content (RFC 9112 §6.3): without it there is nothing to continue. */
const hasContent = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/**
 * Upgraded sockets leave HTTP's bookkeeping: shutdown has to end them itself, and their
 * errors (a client reset) must not become uncaught exceptions.
 */
function trackUpgrades(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('upgrade', (_req, socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

function closeGracefully(server: Server, upgraded: Set<Socket>, graceMs: number): Promise<void> {
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const socket of upgraded) socket.destroy();
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  server.closeIdleConnections();
  const grace = setTimeout(() => server.closeAllConnections(), graceMs);
  grace.unref();
  return drained.finally(() => {
    clearInterval(sweep);
    clearTimeout(grace);
  });
}

/** A host as a URL writes it: an IPv6 address in brackets. */
const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);

export async function startHttpServer(handler: RequestListener, options: HttpServerOptions): Promise<RunningServer> {
  const listener = boundPipelining(handler, options.maxPipelinedRequests);
  const server = createServer(
    { requestTimeout: options.requestTimeoutMs, headersTimeout: options.headersTimeoutMs, connectionsCheckingInterval: DEADLINE_CHECK_MS },
    listener,
  );
  // Node answers `Expect: 100-continue` with an interim 100 before the handler runs. A request
  // without content has nothing to continue (RFC 9110 §10.1.1 lets the server omit the 100),
  // so a GET or HEAD gets its answer alone; one with content gets the 100 it waits for.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (hasContent(req)) res.writeContinue();
    listener(req, res);
  });
  const upgraded = trackUpgrades(server);
  server.on('upgrade', options.upgrade ?? refuseUpgrade);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    server,
    url: `http://${urlHost(host)}:${port}`,
    boundUrl: `http://${urlHost(options.host)}:${port}`,
    port,
    close: () => closeGracefully(server, upgraded, options.shutdownGraceMs),
  };
}
