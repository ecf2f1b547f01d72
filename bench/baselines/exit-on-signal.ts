/**
 * Imported (`node --import`) into a bare baseline that is profiled (`--cpu-prof`): node writes
 * the profile on a normal exit only, and a bare server has no signal handler of its own.
 */
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
