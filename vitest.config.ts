import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Suites start real servers (fake upstream, proxy, redis-server) on random ports.
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
