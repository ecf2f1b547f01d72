/**
 * The text of docs/configuration.md, made from what the proxy itself validates: every setting of
 * config/default.json by its full dotted key, with its default, the environment variable that sets
 * it (src/config.ts ENV_NAMES) and its meaning (the zod schema's `.describe()` text). So the page
 * cannot drift from the code: scripts/gen-config-docs.ts writes it, and a unit test fails when the
 * committed page differs from this text.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigSchema, ENV_NAMES } from '../src/config.js';
import { projectRoot } from '../src/paths.js';

export const CONFIGURATION_PAGE = join('docs', 'configuration.md');

export interface SettingDoc {
  key: string;
  defaultValue: unknown;
  env: string | undefined;
  meaning: string;
}

type Json = Record<string, unknown>;

const isPlainObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Every setting, in the order of config/default.json: a non-empty object there whose schema is an
 * object is a group and is walked; anything else (also `{}` header maps and arrays) is one setting.
 * A setting without a `.describe()` text throws: the page must explain every one.
 */
export function settingDocs(defaults: Json, schema: z.ZodType = ConfigSchema, prefix = ''): SettingDoc[] {
  if (!(schema instanceof z.ZodObject)) throw new Error(`${prefix || '(root)'}: the schema is not an object`);
  const shape = schema.shape as Record<string, z.ZodType>;
  return Object.entries(defaults).flatMap(([name, value]) => {
    const key = prefix ? `${prefix}.${name}` : name;
    const child = shape[name];
    if (child === undefined) throw new Error(`${key} is in config/default.json but not in the schema`);
    if (isPlainObject(value) && Object.keys(value).length > 0 && child instanceof z.ZodObject) return settingDocs(value, child, key);
    const meaning = child.description;
    if (!meaning) throw new Error(`${key} has no .describe() text in the schema (src/config.ts or src/live/settings.ts)`);
    return [{ key, defaultValue: value, env: ENV_NAMES[key], meaning }];
  });
}

const MIB = 1024 * 1024;

function formatDefault(key: string, value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '`[]`' : `\`[${value.map((item) => JSON.stringify(item)).join(', ')}]\``;
  const text = `\`${JSON.stringify(value)}\``;
  // Byte sizes read better with their MiB next to them (134217728 is 128 MiB).
  if (typeof value === 'number' && /Bytes/.test(key) && value >= MIB && value % MIB === 0) return `${text} (${value / MIB} MiB)`;
  return text;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** One sentence per group of settings, to say what the group is about and where it is explained. */
const GROUPS: Record<string, string> = {
  server: 'The public listener.',
  admin: 'The admin listener: `/metrics`, `/health`, `/ready`, the status page and the admin API ([Operations](operations.md#the-admin-listener)).',
  metrics: 'Where Prometheus metrics are served ([Operations](operations.md#metrics)).',
  logLevel: 'How much is logged ([Operations](operations.md#logs)).',
  accessLog: 'The access log: one line per request, hits and refusals sampled ([Operations](operations.md#logs)).',
  upstream:
    'The upstream API nodes: how they are reached, retried, rate-limited and taken out of rotation ([Operations](operations.md#failure-behaviour), [Security](security.md#upstream-credentials)).',
  redis: 'The shared cache tier ([Caching and freshness](caching-and-freshness.md#redis)).',
  cache:
    'The cache: its tiers, freshness, stale serving, shared single-flight and purges ([Caching and freshness](caching-and-freshness.md#freshness-classes)).',
  heap: "V8's heap, sized from the memory tier ([Deployment](deployment.md#container-memory)).",
  finality: 'When data counts as `final` ([Caching and freshness](caching-and-freshness.md#freshness-classes)).',
  chainTip: 'How the chain tip is followed ([Caching and freshness](caching-and-freshness.md#freshness-classes)).',
  activity:
    'Principal activity: broadcasts, block learning and the mempool watcher ([Caching and freshness](caching-and-freshness.md#principal-activity-broadcasts-and-block-learning)).',
  live: 'The live chain: push feed, Redis notifier, block warm-up and WebSocket fan-out ([Live chain](live-chain.md)).',
  surface: 'The wider read surface, cached by route family ([Caching and freshness](caching-and-freshness.md#the-wider-read-surface-route-families)).',
  passthrough: 'Everything else, forwarded to the upstream ([Caching and freshness](caching-and-freshness.md#the-rest-of-the-public-api-passes-through)).',
  rateLimit: 'Rate limits per client ([Security](security.md#rate-limits-and-api-keys)).',
  apiKeys: 'Client API keys ([Security](security.md#rate-limits-and-api-keys)).',
};

const PREAMBLE = `# Configuration

<!-- Generated by \`npm run docs:config\` (scripts/gen-config-docs.ts) from the zod schema's
     .describe() texts (src/config.ts, src/live/settings.ts) and config/default.json.
     Do not edit by hand: change the schema's text and run \`npm run docs:config\`. -->

Every setting has a default in \`config/default.json\`. A JSON file named by \`CONFIG_FILE\` is merged
over it (objects key by key, arrays replaced), and the environment variables below win last. Every
setting is validated at start-up; a bad one stops the process with a message naming it and its
variable (for example \`upstream.urls[0] (UPSTREAM_URLS): must be an http(s) URL\`), exit code 2.
Start-up logs the effective settings, with passwords in URLs, the API key, the admin token, every
configured header value and the API key hashes masked (\`***\`).

\`\`\`sh
CONFIG_FILE=/etc/stacks-cache-proxy.json UPSTREAM_API_KEY=… npm start
\`\`\`

\`\`\`json
{ "cache": { "memory": { "maxBytes": 268435456 } }, "rateLimit": { "enabled": true, "trustedProxies": ["10.0.0.0/8"] } }
\`\`\`
`;

function envTable(docs: readonly SettingDoc[]): string {
  const withEnv = docs.filter((doc) => doc.env !== undefined);
  const rows = withEnv.map(
    (doc) => `| \`${doc.env}\` | [\`${doc.key}\`](#${doc.key.split('.')[0]?.toLowerCase()}) | ${formatDefault(doc.key, doc.defaultValue)} |`,
  );
  return [
    '## Environment variables',
    '',
    `Environment variables cover the usual deployment: \`CONFIG_FILE\` (a JSON file merged over the defaults) and these ${withEnv.length}:`,
    '',
    '| Environment | Setting | Default |',
    '|---|---|---|',
    ...rows,
    '',
    '`API_KEYS_FILE` names a JSON file holding the `apiKeys` list (it replaces the list; see [Security](security.md#rate-limits-and-api-keys)).',
    'An empty `UPSTREAM_API_KEY`, `REDIS_URL` or `ADMIN_TOKEN` means `null`.',
    '',
  ].join('\n');
}

function groupSection(group: string, docs: readonly SettingDoc[]): string {
  const about = GROUPS[group];
  if (about === undefined) throw new Error(`the configuration page has no sentence about the group "${group}" (scripts/config-docs.ts GROUPS)`);
  const rows = docs.map(
    (doc) => `| \`${doc.key}\` | ${cell(formatDefault(doc.key, doc.defaultValue))} | ${doc.env ? `\`${doc.env}\`` : ''} | ${cell(doc.meaning)} |`,
  );
  return [`## ${group}`, '', about, '', '| Setting | Default | Environment | Meaning |', '|---|---|---|---|', ...rows, ''].join('\n');
}

/** The whole page, for the given defaults (config/default.json unless told). */
export function renderConfigurationPage(defaults: Json = JSON.parse(readFileSync(join(projectRoot(), 'config', 'default.json'), 'utf8')) as Json): string {
  const docs = settingDocs(defaults);
  const groups = [...new Set(docs.map((doc) => doc.key.split('.')[0] ?? doc.key))];
  const sections = groups.map((group) =>
    groupSection(
      group,
      docs.filter((doc) => (doc.key.split('.')[0] ?? doc.key) === group),
    ),
  );
  return [PREAMBLE, envTable(docs), ...sections].join('\n');
}
