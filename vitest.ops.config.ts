import { defineConfig } from 'vitest/config';

/**
 * `npm run test:ops`: the tests that need system tools beyond what `npm ci` installs (README's
 * "The two test commands" and docs/contributing.md list them: docker compose, promtool, Prometheus, kubectl, Chromium). `npm test` never
 * runs these; `.ci/run` installs the tools and runs both.
 */
export default defineConfig({
  test: {
    include: ['test/ops/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
