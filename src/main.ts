/**
 * The entry point (`npm start`, the Docker image's command): the only place that reads
 * process.env. Checks the Node.js version, loads the config, sizes V8's heap from it, starts the
 * proxy (composition-root.ts), or with server.workers > 1 the primary of worker mode and its
 * workers (cluster/), and stops it on SIGTERM/SIGINT.
 */
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { unsupportedNodeMessage } from './runtime/node-version.js';

// Before anything else is loaded: on an older Node the dependencies fail while loading (undici),
// so everything else is imported dynamically, after this check (exit 2, as for a bad setting).
const unsupportedNode = unsupportedNodeMessage(process.versions.node, process.execPath);
if (unsupportedNode) {
  process.stderr.write(`stacks-cache-proxy: ${unsupportedNode}\n`);
  process.exit(2);
}

const { getHeapStatistics } = await import('node:v8');
const { default: cluster } = await import('node:cluster');
const { availableParallelism } = await import('node:os');
const { ConfigError, loadConfig, memoryTierBytes, redactedConfig } = await import('./config.js');
const { createLogger } = await import('./logger.js');
const { startProxy } = await import('./composition-root.js');
const { heapFlagsIn, heapFlagsToAdd, heapSizingFor, nodeFlags } = await import('./runtime/heap-sizing.js');
const { logStartupNotes } = await import('./startup-notes.js');
const { workerCount } = await import('./cluster/worker-count.js');
const { startPrimary } = await import('./cluster/primary.js');
const { startWorker } = await import('./cluster/worker.js');

const MiB = 2 ** 20;

/** The heap flags (heap.maxOldSpaceMiB, heap.maxSemiSpaceMiB, heap.markingStartPercent) node was not given on its command line or in NODE_OPTIONS. */
function heapFlagsMissing(config: Config): string[] {
  const sizing = heapSizingFor(memoryTierBytes(config), config.heap.maxOldSpaceMiB, config.heap.maxSemiSpaceMiB, config.heap.markingStartPercent);
  return heapFlagsToAdd(sizing, nodeFlags(process.execArgv, process.env.NODE_OPTIONS));
}

/**
 * Heap limits can only be set when node starts, so a process started without them replaces
 * itself (execve: same pid, so PID 1 in a container stays PID 1 and gets the signals) with
 * node run again on the same script, with the flags added. The new process finds them in its
 * own execArgv and goes on. Returns why it could not, if it could not.
 */
function relaunchWithHeapFlags(config: Config): string | undefined {
  const flags = heapFlagsMissing(config);
  if (flags.length === 0) return undefined;
  if (typeof process.execve !== 'function') return 'process.execve is not available on this platform';
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...flags, ...process.argv.slice(1)], process.env);
  } catch (error) {
    return (error as Error).message;
  }
}

function logHeap(logger: Logger, notRelaunched: string | undefined): void {
  const limitMiB = Math.round(getHeapStatistics().heap_size_limit / MiB);
  const heapFlags = heapFlagsIn(nodeFlags(process.execArgv, process.env.NODE_OPTIONS));
  if (notRelaunched) logger.warn({ heapLimitMiB: limitMiB, reason: notRelaunched }, "heap not sized from the memory tier: V8's defaults apply");
  else logger.info({ heapLimitMiB: limitMiB, flags: heapFlags }, 'heap');
}

async function main(): Promise<void> {
  let config;
  let workers;
  try {
    config = loadConfig(process.env);
    workers = cluster.isWorker ? 1 : workerCount(config, availableParallelism());
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`stacks-cache-proxy: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // A worker of worker mode (cluster/): started by the primary, which logged the start-up and sized its heap.
  if (cluster.isWorker) return runWorker(config);
  const notRelaunched = relaunchWithHeapFlags(config);
  const logger = createLogger(config.logLevel);
  logger.info({ config: redactedConfig(config) }, 'starting');
  logStartupNotes(logger, config);
  logHeap(logger, notRelaunched);
  const cache = config.redis.url ? 'memory+redis' : 'memory';
  if (workers > 1) {
    // Each worker gets the heap flags this process has, or would have had (without execve).
    const flags = heapFlagsMissing(config);
    // 'advanced' (structured clone): single-flight through the primary relays entry bytes as binary, not as JSON arrays.
    cluster.setupPrimary({ execArgv: [...process.execArgv, ...flags], serialization: 'advanced' });
    const started = await startPrimary(config, logger, workers);
    logger.info({ url: started.boundUrl, adminUrl: started.adminBoundUrl, cache, workers }, 'listening');
    return;
  }
  const proxy = await startProxy(config, { logger });
  // Before the line that says it listens: a SIGTERM sent on reading it must drain, not find node's default (exit at once).
  stopOnSignals(logger, () => proxy.close());
  logger.info({ url: proxy.boundUrl, adminUrl: proxy.adminBoundUrl, cache }, 'listening');
}

async function runWorker(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel).child({ worker: cluster.worker?.id, pid: process.pid });
  const proxy = await startWorker(config, logger);
  stopOnSignals(logger, () => proxy.close());
  logger.info({ url: proxy.boundUrl }, 'worker listening');
}

function stopOnSignals(logger: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  // A port that cannot be opened is the operator's to fix, and its message names the setting: no stack.
  const text = error instanceof Error && error.name === 'ListenError' ? error.message : ((error as Error).stack ?? String(error));
  process.stderr.write(`stacks-cache-proxy: failed to start: ${text}\n`);
  process.exit(1);
});
