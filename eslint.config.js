// Lint rules that keep the architecture's boundaries (DESIGN §2): ioredis only in the Redis
// store, undici only in the upstream client, and the pure policy/key/route modules free of
// I/O imports.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (paths, patterns = []) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

const IOREDIS = { name: 'ioredis', message: 'Only src/cache/redis-store.ts talks to Redis.' };
const UNDICI = { name: 'undici', message: 'Only src/upstream/ talks to the upstreams.' };
const IO = ['node:fs', 'node:net', 'node:http', 'node:child_process'].map((name) => ({
  name,
  message: 'Policy, keys and routes are pure: no I/O.',
}));

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
  { files: ['src/**/*.ts'], ignores: ['src/cache/redis-store.ts', 'src/upstream/**'], rules: restrict([IOREDIS, UNDICI]) },
  { files: ['src/upstream/**/*.ts'], rules: restrict([IOREDIS]) },
  { files: ['src/cache/redis-store.ts'], rules: restrict([UNDICI]) },
  // Components call telemetry; telemetry knows no component (its vocabulary is its own).
  {
    files: ['src/telemetry/**/*.ts'],
    rules: restrict(
      [IOREDIS, UNDICI],
      [{ group: ['../cache/*', '../upstream/*', '../http/*', '../proxy/*', '../routes/*', '../*-server.js', '../app.js'], message: 'Telemetry depends on no component.' }],
    ),
  },
  {
    files: [
      'src/cache/policy.ts',
      'src/cache/key.ts',
      'src/cache/admit.ts',
      'src/cache/tx-member.ts',
      'src/chain/view.ts',
      'src/chain/fork-search.ts',
      'src/chain/finality.ts',
      'src/chain/reorg-log.ts',
      'src/routes/**/*.ts',
    ],
    rules: restrict([IOREDIS, UNDICI, ...IO]),
  },
);
