/**
 * Imported (`node --import`) into baseline 2 for the process-tax scenario's "modules loaded"
 * variant: every module the proxy's entry point loads (the composition root and all it imports:
 * undici, ioredis, prom-client, pino, zod, the config schema, ...), evaluated but nothing
 * started, so that what the proxy's code costs a hit by merely being in the process (a larger
 * heap, more compiled code, module-level state) is told apart from what its running parts cost.
 */
await import('../../src/config.js');
await import('../../src/logger.js');
await import('../../src/composition-root.js');
await import('../../src/runtime/heap-sizing.js');
await import('../../src/startup-notes.js');
await import('../../src/cluster/primary.js');
await import('../../src/cluster/worker.js');
