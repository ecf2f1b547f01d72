/**
 * The HTTP server's life: listen, keep track of upgraded (WebSocket) connections, and close
 * gracefully: stop accepting, let in-flight requests finish within a grace period, then end
 * whatever is left.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type UpgradeListener = (req: IncomingMessage, socket: Socket, head: Buffer) => void;

export interface HttpServerOptions {
  port: number;
  host: string;
  requestTimeoutMs: number;
  /** How long in-flight requests get to finish once closing starts. */
  shutdownGraceMs: number;
  /** Where upgrade requests go; without one, Node refuses them and closes the socket. */
  upgrade?: UpgradeListener;
}

export interface RunningServer {
  server: Server;
  /** A URL clients on this machine can use (a wildcard host becomes 127.0.0.1). */
  url: string;
  port: number;
  /** Stops accepting and resolves once every connection has ended. */
  close(): Promise<void>;
}

// Idle keep-alive connections are closed this often while draining: each becomes idle when
// its last request finishes, and Node only closes the ones idle at the moment it is asked.
const IDLE_SWEEP_MS = 50;

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

export async function startHttpServer(handler: RequestListener, options: HttpServerOptions): Promise<RunningServer> {
  const server = createServer({ requestTimeout: options.requestTimeoutMs }, handler);
  const upgraded = options.upgrade ? trackUpgrades(server) : new Set<Socket>();
  if (options.upgrade) server.on('upgrade', options.upgrade);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return { server, url: `http://${host}:${port}`, port, close: () => closeGracefully(server, upgraded, options.shutdownGraceMs) };
}
