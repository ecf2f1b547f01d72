/**
 * The standalone server's two listeners: the public port (the request pipeline and WebSocket
 * upgrades) and the admin port. Each is entered in the core's ordered stop as soon as it
 * listens (stop accepting, then drain), and a port that cannot be opened fails with an error
 * that names its setting, so an operator knows which one to change.
 */
import type { RequestListener } from 'node:http';
import type { Config } from '../config.js';
import type { StopSequence } from '../stop-sequence.js';
import { startHttpServer, type HttpServerOptions, type RunningServer, type UpgradeListener } from './server-lifecycle.js';

export interface ListenedCore {
  handle: RequestListener;
  upgrade: UpgradeListener | undefined;
  handleAdmin: RequestListener;
  stops: StopSequence;
}

/** Which listener, as an operator configures it. */
export interface ListenerSetting {
  /** "the public port", "the admin port". */
  name: string;
  /** The environment variable and the config key of its port, and of its host. */
  port: string;
  host: string;
}

export const PUBLIC_LISTENER: ListenerSetting = { name: 'the public port', port: 'PORT / server.port', host: 'HOST / server.host' };
export const ADMIN_LISTENER: ListenerSetting = { name: 'the admin port', port: 'ADMIN_PORT / admin.port', host: 'ADMIN_HOST / admin.host' };

/** What a listen error code says, and whether the host (not the port) is the setting to change. */
const CAUSES: Record<string, { why: string; host?: true }> = {
  EADDRINUSE: { why: 'is taken' },
  EACCES: { why: 'needs privileges this process lacks' },
  EADDRNOTAVAIL: { why: 'is on an address this machine does not have', host: true },
  ENOTFOUND: { why: 'is on a host name that does not resolve', host: true },
};

/** The name a listen error carries (main.ts prints its message without a stack). */
export const LISTEN_ERROR = 'ListenError';

/**
 * A listen error, its message naming the setting: `listen EADDRINUSE 127.0.0.1:9091: the admin
 * port is taken (ADMIN_PORT / admin.port)`. Keeps the code, and the original as the cause.
 */
export function listenError(error: unknown, listener: ListenerSetting, host: string, port: number): Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  const cause = typeof code === 'string' ? CAUSES[code] : undefined;
  const why = cause?.why ?? `cannot be opened: ${error instanceof Error ? error.message : String(error)}`;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const setting = cause?.host ? listener.host : listener.port;
  const named = new Error(`listen ${typeof code === 'string' ? code : 'failed'} ${address}: ${listener.name} ${why} (${setting})`, { cause: error });
  // Named so that the entry point prints the message alone: it says all an operator needs.
  named.name = LISTEN_ERROR;
  return Object.assign(named, { code });
}

async function listen(handler: RequestListener, options: HttpServerOptions, listener: ListenerSetting, stops: StopSequence): Promise<RunningServer> {
  let running: RunningServer;
  try {
    running = await startHttpServer(handler, options);
  } catch (error) {
    throw listenError(error, listener, options.host, options.port);
  }
  let drained: Promise<void> | undefined;
  stops.add('stop-accepting', () => void (drained = running.close()));
  stops.add('drained', () => drained);
  return running;
}

/** Opens the public listener, then the admin one. */
export async function openListeners(core: ListenedCore, config: Config): Promise<{ main: RunningServer; admin: RunningServer }> {
  const common = {
    requestTimeoutMs: config.server.requestTimeoutMs,
    headersTimeoutMs: config.server.headersTimeoutMs,
    maxPipelinedRequests: config.server.maxPipelinedRequests,
    shutdownGraceMs: config.server.shutdownGraceMs,
  };
  const main = await listen(core.handle, { ...common, port: config.server.port, host: config.server.host, upgrade: core.upgrade }, PUBLIC_LISTENER, core.stops);
  const admin = await listen(core.handleAdmin, { ...common, port: config.admin.port, host: config.admin.host }, ADMIN_LISTENER, core.stops);
  return { main, admin };
}
