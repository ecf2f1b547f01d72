// Lint rules that keep the architecture's boundaries (DESIGN §2): ioredis only in the Redis
// store, undici only in src/upstream/, prom-client only in src/telemetry/, pino only in the
// logger; the direction of imports between folders; no I/O, clock, telemetry or logging in
// the pure modules; Date.now only in src/clock.ts; nothing in src/ imports tests or tooling.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (paths, patterns = []) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

const IOREDIS = { name: 'ioredis', message: 'Only src/cache/redis-store.ts and src/cache/redis-rate-limit.ts talk to Redis.' };
const REDIS_MODULES = ['src/cache/redis-store.ts', 'src/cache/redis-rate-limit.ts'];
const UNDICI = { name: 'undici', message: 'Only src/upstream/ talks to the upstreams.' };
const PROM = { name: 'prom-client', message: 'Metrics belong to src/telemetry/: call a Telemetry method.' };
const PINO = { name: 'pino', message: 'Only src/logger.ts creates loggers.' };
const IO = ['node:fs', 'node:net', 'node:http', 'node:https', 'node:child_process', 'node:dgram', 'node:dns'].map((name) => ({
  name,
  message: 'Pure modules do no I/O.',
}));
// The proxy never depends on test code or the test tooling.
const OUTSIDE_SRC = [{ group: ['**/test/**', '**/testkit/**', '**/scripts/**', '**/bench/**'], message: 'src/ does not import tests or tooling.' }];

/** `folder` may not import these sibling folders (imports are relative: ../<name>/...). */
const layer = (folder, forbidden) => ({
  group: forbidden.map((name) => `../${name}/*`),
  message: `${folder} sits below ${forbidden.join(', ')} in the layering (README "Layout").`,
});

// Modules that decide or format and do nothing else.
const PURE = [
  'src/errors.ts',
  'src/cache/policy.ts',
  'src/cache/key.ts',
  'src/cache/admit.ts',
  'src/cache/route-read-spec.ts',
  'src/cache/entry.ts',
  'src/cache/tx-member.ts',
  'src/cache/identity.ts',
  'src/cache/json-object-scan.ts',
  'src/cache/redis-url.ts',
  'src/cache/purge.ts',
  'src/cache/key-subjects.ts',
  'src/http/admin/purge-request.ts',
  'src/http/admin/cache-stats.ts',
  'src/chain/view.ts',
  'src/chain/fork-search.ts',
  'src/chain/finality.ts',
  'src/chain/reorg-log.ts',
  'src/chain/tip-evidence.ts',
  'src/chain/canonical-record.ts',
  'src/chain/jump-walk.ts',
  'src/chain/activity.ts',
  'src/chain/touched-principals.ts',
  'src/chain/broadcast-principals.ts',
  'src/cache/chain-position.ts',
  'src/upstream/breaker.ts',
  'src/upstream/errors.ts',
  'src/upstream/answer-verdict.ts',
  'src/upstream/retry-after.ts',
  'src/upstream/outgoing-headers.ts',
  'src/http/request-target.ts',
  'src/http/forward-policy.ts',
  'src/limits/client-identity.ts',
  'src/limits/api-keys.ts',
  'src/limits/budget.ts',
  'src/runtime/heap-sizing.ts',
  // The wider read surface (issue 15): the table, planning, keys, canonical bodies, admission, evidence rules.
  'src/surface/families.ts',
  'src/surface/plan.ts',
  'src/surface/canonical-json.ts',
  'src/surface/admit-surface.ts',
  'src/surface/surface-spec.ts',
  'src/surface/evidence.ts',
  // The live chain (issue 16): the upstream's channels' rules and the fan-out's bounds.
  'src/live/settings.ts',
  'src/live/rpc-topics.ts',
  'src/live/socket-io-topics.ts',
  'src/live/client-bounds.ts',
  // Worker mode's admin port: how the workers' answers combine into one.
  'src/cluster/combine-admin-answers.ts',
  'src/cluster/combine-readiness.ts',
  'src/cluster/combine-status-reports.ts',
];
const IMPURE_HELPERS = {
  group: ['**/telemetry/*', '**/logger.js', '**/clock.js'],
  message: 'Pure modules take time and report nothing: no clock, telemetry or logger.',
};

/**
 * What each folder may not import: the libraries kept to one place, and the folders above it
 * (layers, bottom up: routes (pure); upstream; chain (reads upstreams); cache (reads chain, routes,
 * upstream); limits; telemetry knows no component; http serves from all of them; live (issue 16:
 * push feed, warm-up, fan-out) drives http and the chain; the composition root builds them all).
 * `test` says whether a file belongs to the folder (REDIS_MODULES are the cache folder's own case).
 */
const FOLDERS = [
  {
    files: ['src/upstream/**/*.ts'],
    test: (f) => f.startsWith('src/upstream/'),
    paths: [IOREDIS, PROM, PINO],
    patterns: [layer('upstream/', ['cache', 'chain', 'http', 'routes', 'live'])],
  },
  {
    files: ['src/chain/**/*.ts'],
    test: (f) => f.startsWith('src/chain/'),
    paths: [IOREDIS, UNDICI, PROM, PINO],
    patterns: [layer('chain/', ['cache', 'http', 'routes', 'live'])],
  },
  {
    files: ['src/cache/**/*.ts'],
    ignores: REDIS_MODULES,
    test: (f) => f.startsWith('src/cache/') && !REDIS_MODULES.includes(f),
    paths: [IOREDIS, UNDICI, PROM, PINO],
    patterns: [layer('cache/', ['http', 'live'])],
  },
  { files: REDIS_MODULES, test: (f) => REDIS_MODULES.includes(f), paths: [UNDICI, PROM, PINO], patterns: [layer('cache/', ['http', 'live'])] },
  {
    files: ['src/routes/**/*.ts'],
    test: (f) => f.startsWith('src/routes/'),
    paths: [IOREDIS, UNDICI, PROM, PINO, ...IO],
    patterns: [layer('routes/', ['cache', 'chain', 'http', 'upstream', 'telemetry', 'live']), IMPURE_HELPERS],
  },
  // Rate limits (issue 9): below cache (whose Redis budget implements limits/budget.ts) and http.
  {
    files: ['src/limits/**/*.ts'],
    test: (f) => f.startsWith('src/limits/'),
    paths: [IOREDIS, UNDICI, PROM, PINO],
    patterns: [layer('limits/', ['cache', 'chain', 'http', 'routes', 'upstream', 'live'])],
  },
  // Components call telemetry; telemetry knows no component (its vocabulary is its own).
  {
    files: ['src/telemetry/**/*.ts'],
    test: (f) => f.startsWith('src/telemetry/'),
    paths: [IOREDIS, UNDICI, PINO],
    patterns: [layer('telemetry/', ['cache', 'chain', 'http', 'limits', 'routes', 'upstream', 'live'])],
  },
  { files: ['src/http/**/*.ts'], test: (f) => f.startsWith('src/http/'), paths: [IOREDIS, UNDICI, PROM, PINO], patterns: [layer('http/', ['live'])] },
];
/** Everything else in src/ (the live chain, the composition root, config, ...): the libraries only. */
const REST_OF_SRC = { paths: [IOREDIS, UNDICI, PROM, PINO], patterns: [] };

const unique = (items) => [...new Set(items)];

/**
 * A pure module keeps its folder's rules (its layer above all) and adds its own: no I/O, no clock,
 * telemetry or logger. One block per file, so that no later block can replace the folder's rule
 * (flat config: a file matched by two blocks gets the last one's rule).
 */
const pureBlock = (file) => {
  const folder = FOLDERS.find((candidate) => candidate.test(file)) ?? REST_OF_SRC;
  return {
    files: [file],
    rules: restrict(unique([...folder.paths, IOREDIS, UNDICI, PROM, PINO, ...IO]), unique([...OUTSIDE_SRC, ...folder.patterns, IMPURE_HELPERS])),
  };
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  // Tests build hostile inputs on purpose (control characters in paths).
  { files: ['test/**/*.ts'], rules: { 'no-control-regex': 'off' } },
  // Every block below restricts one folder and lists everything its folder may not import.
  {
    files: ['src/**/*.ts'],
    ignores: [...REDIS_MODULES, 'src/upstream/**', 'src/telemetry/**', 'src/logger.ts'],
    rules: restrict(REST_OF_SRC.paths, OUTSIDE_SRC),
  },
  { files: ['src/logger.ts'], rules: restrict([IOREDIS, UNDICI, PROM], OUTSIDE_SRC) },
  ...FOLDERS.map(({ files, ignores, paths, patterns }) => ({ files, ...(ignores ? { ignores } : {}), rules: restrict(paths, [...OUTSIDE_SRC, ...patterns]) })),
  // Pure modules: decisions and formats only, no I/O, no logging, no metrics. Time comes in as an argument.
  ...PURE.map(pureBlock),
  // One wall clock (src/clock.ts), injected everywhere, so tests can move time for every component at once.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/clock.ts'],
    rules: { 'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Read time from the injected Clock (src/clock.ts).' }] },
  },
);
