import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/ops needs system tools (docker compose, promtool, kubectl, Chromium): `npm run test:ops`.
    exclude: ['test/ops/**', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Suites start real servers (fake upstream, proxy, redis-server) on random ports.
    pool: 'forks',
    // dist/ for the suites that run the built proxy (test/support/build-dist.ts).
    globalSetup: ['./test/support/build-dist.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
