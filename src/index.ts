/**
 * The package entry (`import { createProxy } from 'stacks-cache-proxy'`): the proxy's core as a
 * Connect/Express middleware, for a team that already runs an app. The settings are the keys a
 * CONFIG_FILE takes, merged over config/default.json and validated; nothing else is read (no
 * environment variable). No socket is opened: the app's server carries the requests, and the
 * admin handler is the app's to serve if it wants one. Express itself is never imported here:
 * the middleware is the plain `(req, res, next)` of node:http.
 *
 *   const proxy = await createProxy({ upstream: { urls: ['https://api.hiro.so'] } });
 *   app.use('/stacks', proxy.middleware);
 *   server.on('upgrade', proxy.upgrade);   // WebSockets, see docs/embedding.md
 *   await proxy.close();
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { configFrom, type Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { createProxyCore, type ProxyCore } from './composition-root.js';
import type { NextHandler } from './http/pipeline.js';
import { refuseUpgrade, type UpgradeListener } from './http/server-lifecycle.js';

export { ConfigError, type Config } from './config.js';
export type { NextHandler } from './http/pipeline.js';

/** Objects key by key, every key optional; arrays and scalars as a whole (as config files merge). */
type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

/** The keys a CONFIG_FILE takes (docs/configuration.md), any of them; the rest come from config/default.json. */
export type ProxySettings = DeepPartial<Config>;

export interface CreateProxyOptions {
  /** A pino logger for the proxy's lines (default: JSON lines on stdout at the config's logLevel). */
  logger?: Logger;
}

export interface EmbeddedProxy {
  /**
   * The Connect/Express middleware. It answers what the standalone server would answer (the
   * cached routes, /health and /ready, the passthrough's paths when passthrough.enabled) with
   * the same bytes; every other request goes on to `next()` untouched. After close() began,
   * every request goes on to `next()`.
   */
  middleware: (req: IncomingMessage, res: ServerResponse, next: NextHandler) => void;
  /**
   * For the app's server's `upgrade` event: WebSocket upgrades on the proxy's own paths
   * (`/extended/v1/ws`, `/socket.io/`; req.url without the app's mount prefix), handled as the
   * standalone server does (the fan-out, or the passthrough's tunnel); others are refused with
   * a 404. close() ends the sockets it holds.
   */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** The admin listener's handler (/metrics, /health, /ready with details, the admin API), to serve on a port of the app's. */
  admin: RequestListener;
  /** The validated configuration in use. */
  config: Config;
  /** Stops everything the proxy started (tip tracker, feeds, Redis connections, upstream pools); afterwards nothing of it keeps the process alive. */
  close(): Promise<void>;
}

/**
 * Upgraded sockets are out of every server's bookkeeping: the proxy ends them itself when it
 * stops (as the standalone server does), and a client's reset must not become an uncaught error.
 */
function trackedUpgrades(core: ProxyCore): EmbeddedProxy['upgrade'] {
  const sockets = new Set<Socket>();
  let closing = false;
  core.stops.add('stop-accepting', () => {
    closing = true;
    for (const socket of sockets) socket.destroy();
  });
  const upgrade: UpgradeListener = core.upgrade ?? refuseUpgrade;
  // node:http's upgrade event types its socket as a Duplex; it is the connection's net.Socket.
  return (req, duplex, head) => {
    const socket = duplex as Socket;
    if (closing) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => sockets.delete(socket));
    upgrade(req, socket, head);
  };
}

export async function createProxy(settings: ProxySettings, options: CreateProxyOptions = {}): Promise<EmbeddedProxy> {
  const config = configFrom(settings);
  const core = await createProxyCore(config, { logger: options.logger ?? createLogger(config.logLevel) });
  let closing = false;
  core.stops.add('refuse', () => (closing = true));
  return {
    middleware: (req, res, next) => {
      if (closing) next();
      else core.handle(req, res, next);
    },
    upgrade: trackedUpgrades(core),
    admin: core.handleAdmin,
    config,
    close: () => core.close(),
  };
}
