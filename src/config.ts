/**
 * All settings in one zod schema. Defaults live in config/default.json; a JSON file named
 * by CONFIG_FILE is merged over them; the documented environment variables win last.
 * A bad setting stops start-up with a message that names it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { projectRoot } from './paths.js';
import { parseRedisUrl, redactRedisUrl } from './cache/redis-url.js';
import { API_KEY_HEADER, refusedHeader } from './upstream/outgoing-headers.js';
import { ApiKeysSchema } from './limits/api-keys.js';
import { parseCidr } from './limits/client-identity.js';
import { LiveSchema } from './live/settings.js';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
// A path as request-target.ts decides them: so that a prefix can ever match, it has no dot
// segments, no empty segments, no percent-encoding, query or backslash.
const pathPrefix = z
  .string()
  .regex(/^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]+\/)*[A-Za-z0-9\-._~!$&'()*+,;=:@]*$/, 'must be a path starting with "/", without "//", "%", "?" or "\\"')
  .refine((prefix) => !/\/\.\.?(?:\/|$)/.test(prefix), 'must not contain "." or ".." segments');
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/**
 * An upstream is named by its origin: the proxy sends the API's own paths (/extended/...,
 * /v2/...) there, as the upstream publishes them. A path prefix would be dropped without a
 * word, so it is refused, as are a query and a fragment.
 */
const upstreamUrl = httpUrl.superRefine((url, ctx) => {
  const parsed = URL.parse(url);
  if (parsed === null) return; // httpUrl has said so already
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '') {
    ctx.addIssue({
      code: 'custom',
      message: `must be an upstream's base URL without a path, query or fragment (got "${parsed.pathname}${parsed.search}${parsed.hash}"): requests go to the API's own paths (/extended/..., /v2/...) on that origin; a path prefix is not supported`,
    });
  }
});

/** Header name to value, lower-cased; names and values an operator may not set are refused. */
const headerMap = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const why = refusedHeader(name, value);
      if (why) ctx.addIssue({ code: 'custom', message: why, path: [name] });
    }
  })
  .transform((headers) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])));

/** `url`'s origin; a URL that does not parse (reported by its own check) is kept as it is. */
const originOf = (url: string): string => URL.parse(url)?.origin ?? url;

export const ConfigSchema = z
  .object({
    server: z
      .object({
        port: z.number().int().min(0).max(65535).describe('TCP port to listen on; `0` picks a free one'),
        host: z.string().min(1).describe('Address to bind'),
        requestTimeoutMs: positiveInt.describe(
          "Longest a client request may take before Node closes it (also how long a WebSocket upgrade's upstream socket may stay silent before its `101`)",
        ),
        headersTimeoutMs: positiveInt.describe(
          "Longest a client may take to send a request's head (an upgrade request's too); at most `server.requestTimeoutMs`",
        ),
        maxPipelinedRequests: positiveInt.describe(
          'Requests of one connection handled at a time; later pipelined ones wait and the connection is not read meanwhile',
        ),
        shutdownGraceMs: positiveInt.describe('On `SIGTERM`/`SIGINT`, how long in-flight requests may finish before connections are closed'),
        workers: z
          .number()
          .int()
          .min(0)
          .max(256)
          .describe(
            "Processes serving the public port ([Worker mode](deployment.md#worker-mode)): `1` one process (no cluster), `0` one per core, `N` that many; more than one needs `cache.sharedSingleFlight.enabled`, and without `redis.url` the workers' single-flight goes through the primary",
          ),
      })
      .strict()
      .refine((server) => server.headersTimeoutMs <= server.requestTimeoutMs, {
        message: 'must not exceed server.requestTimeoutMs',
        path: ['headersTimeoutMs'],
      }),
    // The admin listener (issue 9): operators' endpoints and the admin API, off the public port.
    admin: z
      .object({
        port: z.number().int().min(0).max(65535).describe('TCP port of the [admin listener](operations.md#the-admin-listener); `0` picks a free one'),
        host: z.string().min(1).describe('Address the admin listener binds; loopback by default: keep it on loopback or a private network'),
        token: z
          .string()
          .min(16, 'must be at least 16 characters')
          .nullable()
          .describe(
            'Bearer token of the admin API, at least 16 characters; `null` turns the admin API off; never logged. Set it in the environment rather than in a config file',
          ),
      })
      .strict(),
    metrics: z.object({ onPublicPort: z.boolean().describe('Also serve `/metrics` on the public port (it is always served on the admin listener)') }).strict(),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .describe('pino log level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`'),
    // Issue 10: a line per hit costs more CPU than the hit itself; metrics count every request anyway.
    accessLog: z
      .object({
        enabled: z.boolean().describe('One access-log line per request at `info` ([Logs](operations.md#logs)); `false`: none (state changes are still logged)'),
        hitsEvery: positiveInt.describe(
          'Log one cache hit (`X-Cache: HIT`) in this many; the line carries `"sampled": N`. Every other answer, refusals aside, logs a line. `1` logs every hit',
        ),
        refusalsEvery: positiveInt.describe(
          'Log one refusal answered before any cache or upstream work (a refused request target\'s `400`, `401` for an unknown API key, `429`) in this many; the line carries `"sampled": N`. `1` logs every one',
        ),
      })
      .strict(),
    upstream: z
      .object({
        urls: z
          .array(upstreamUrl)
          .min(1)
          .describe(
            "Upstream API base URLs, tried in order (comma-separated in `UPSTREAM_URLS`): origins only. A URL with a path prefix such as `http://host:3999/api`, a query or a fragment is refused at start-up (exit code 2): requests go to the API's own paths (`/extended/...`, `/v2/...`) on that origin",
          ),
        apiKey: z
          .string()
          .min(1)
          .refine((key) => refusedHeader(API_KEY_HEADER, key) === undefined, 'must not contain control characters')
          .nullable()
          .describe(
            'Sent as `x-api-key` on every upstream request (reads, tip polls, passthrough, WebSocket upgrades); never logged; see [Upstream credentials](security.md#upstream-credentials)',
          ),
        headers: headerMap.describe(
          'Headers sent on every upstream request, e.g. `{"x-tenant": "dapp-1"}`; names are case-insensitive; hop-by-hop headers, `Host`, `Content-Length`, `Expect`, conditional and range headers and `Accept-Encoding` are refused at start-up',
        ),
        headersByUrl: z
          .record(httpUrl, headerMap)
          .transform((byUrl) => Object.fromEntries(Object.entries(byUrl).map(([url, headers]) => [originOf(url), headers])))
          .describe(
            'Per upstream, keyed by one of `upstream.urls`: headers merged over `upstream.headers` and the API key for that upstream only, e.g. `{"https://api.hiro.so": {"x-api-key": "…"}}`; the same refusals as `upstream.headers`',
          ),
        connectTimeoutMs: positiveInt.describe('TCP/TLS connect timeout per upstream'),
        headersTimeoutMs: positiveInt.describe("Time to the upstream's response headers"),
        bodyTimeoutMs: positiveInt.describe("Longest pause while reading the upstream's body"),
        maxBodyBytes: positiveInt.describe('Larger upstream bodies are refused (not cached, `502`)'),
        connectionsPerUpstream: positiveInt.describe(
          "Keep-alive connections per upstream (undici pool). Keep it at least `upstream.maxConcurrent`: requests that the queue admits but the pool has no connection for wait inside the pool for a whole upstream round trip (at 32 connections, 50 concurrent cold misses at 20 ms upstream latency gained about 14 ms at p50; at 64, about 2 ms). A connection is opened only when needed and closed after 4 s idle (undici's keep-alive default, or sooner when the upstream says so)",
        ),
        maxConcurrent: positiveInt.describe('Requests in flight to one upstream; more wait in its queue'),
        maxQueue: nonNegativeInt.describe('Requests waiting for one upstream; beyond that (on every usable upstream) clients get `503` with `Retry-After: 1`'),
        maxAttempts: z
          .number()
          .int()
          .min(1)
          .max(2, 'must be 1 or 2: a client request costs the upstreams at most two requests')
          .describe(
            'Attempts per client request: `2` retries a failure once, on the next usable upstream (the same one when it is alone, unless it rate-limited); `1`: no retry. At most `2`: a client request costs the upstreams at most two requests',
          ),
        retryBackoffMs: positiveInt.describe('Pause before the first retry; doubles per retry, ±50% jitter'),
        requestDeadlineMs: positiveInt.describe('Total time for all attempts of one upstream request'),
        failureThreshold: positiveInt.describe(
          "Consecutive failures (transport errors, timeouts, `429`, `502`/`503`/`504`, invalid bodies, failed tip polls; not a handler's JSON `4xx`/`500` for one input) that open an upstream's circuit breaker",
        ),
        cooldownMs: positiveInt.describe('How long a breaker stays open before one trial request (half-open)'),
        maxLagBlocks: nonNegativeInt.describe('An upstream whose tip is more than this many blocks behind the best upstream tip is not read from'),
        retryAfterDefaultMs: positiveInt.describe('How long a `429` without a usable `Retry-After` leaves that upstream alone'),
        retryAfterMaxMs: positiveInt.describe('The longest one `429` leaves an upstream alone, whatever its `Retry-After` says'),
      })
      .strict()
      .superRefine((upstream, ctx) => {
        const origins = new Set(upstream.urls.map(originOf));
        for (const origin of Object.keys(upstream.headersByUrl)) {
          if (!origins.has(origin)) {
            ctx.addIssue({ code: 'custom', message: `${origin} is not one of upstream.urls`, path: ['headersByUrl', origin] });
          }
        }
      }),
    redis: z
      .object({
        url: z
          .string()
          .refine((url) => parseRedisUrl(url) !== undefined, 'must be redis://, rediss://, redis+sentinel://h1:p1,h2:p2/name or redis+cluster://h1:p1,h2:p2')
          .nullable()
          .describe(
            'Shared cache tier: `redis://`, `rediss://`, `redis+sentinel://h1:p1,h2:p2/name` or `redis+cluster://h1:p1,h2:p2`; `null` uses memory only; see [Redis](caching-and-freshness.md#redis)',
          ),
        commandTimeoutMs: positiveInt.describe('A Redis command slower than this counts as a miss; nothing waits on a dead Redis'),
        autoPipelining: z
          .boolean()
          .describe(
            "ioredis auto-pipelining on the cache and rate-limit connections (in Cluster mode per node): the commands of concurrent requests go out in one write per event-loop turn. Measured on a Redis-tier hit at 50 connections: Redis' own CPU per request 2.3 µs instead of 6.2 µs and the proxy's system time 9.3 µs instead of 12.9 µs, but the proxy's user time about 4-6 µs higher (ioredis' pipeline bookkeeping), so the proxy's total CPU per hit is about the same or slightly higher; `false` trades Redis CPU (the one shared, single-threaded part of a fleet) for a few µs of proxy CPU per hit",
          ),
      })
      .strict(),
    cache: z
      .object({
        keyPrefix: z
          .string()
          .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "." and "-" only')
          .describe(
            'Prefix of every Redis key (`<prefix>:v2:<route-id>:<canonical request>`; route families: `<prefix>:v2:s:<family>:…`; rate-limit budgets: `<prefix>:rl:<window>:<client>`); letters, digits, `_`, `.` and `-`',
          ),
        memory: z
          .object({
            maxBytes: positiveInt.describe(
              "Memory tier size without Redis (LRU by bytes; an entry counts what it costs the process: its key, headers, metadata and about 600 bytes of overhead one and a half times (the room V8's heap keeps beyond what is live), then its body's bytes and 224 bytes for owning them; expired entries are swept every 30 s). V8's heap is sized from it (`heap.maxOldSpaceMiB`); for the memory a container needs see [Memory under a flood](benchmarks.md#memory-under-a-flood-of-distinct-requests)",
            ),
            maxBytesWithRedis: positiveInt.describe('Memory tier size in front of Redis'),
            maxEntryBytes: positiveInt.describe('Larger answers skip the memory tier'),
          })
          .strict(),
        ttl: z
          .object({
            tipSafetyMs: positiveInt.describe('Longest a `tip` entry is served without revalidation, even if no block comes'),
            mempoolMs: positiveInt.describe('How long a `mempool` entry is fresh'),
            staleWhileRevalidateMs: nonNegativeInt.describe(
              'After a `mempool` entry expires (same chain tip), how long it is still served (`X-Cache: STALE`) while one background refresh runs; `0` turns this off',
            ),
            retainExpiredMs: nonNegativeInt.describe('How long expired entries are kept for revalidation and stale-if-error'),
            learnedMaxMs: positiveInt.describe(
              'Learned freshness: longest a `tip` entry about a principal no block since touched, or a `mempool` entry the mempool watcher vouches for, is served fresh past its tip or TTL ([Principal activity](caching-and-freshness.md#principal-activity-broadcasts-and-block-learning))',
            ),
            mempoolFeesMaxAgeMs: nonNegativeInt.describe(
              'How old `GET /extended/v2/mempool/fees` (a mempool-wide fee estimate) may be served (`X-Cache: HIT`) whatever the mempool or tip did since: the one answer allowed to lag the mempool ([why](caching-and-freshness.md#the-mempool-fee-estimate-may-lag)); after it, an ordinary `mempool` entry; `0` turns this off',
            ),
          })
          .strict(),
        staleIfErrorMs: nonNegativeInt.describe('How long past expiry an entry may be served (`X-Cache: STALE`) when every upstream fails'),
        staleIfErrorMaxBlocks: nonNegativeInt.describe('A `tip` entry validated more blocks below the current tip than this is never served stale'),
        sharedSingleFlight: z
          .object({
            enabled: z
              .boolean()
              .describe(
                'One instance (with Redis) or worker ([worker mode](deployment.md#worker-mode), through Redis or else the primary) fetches a miss, the others wait for its answer',
              ),
            lockTtlMs: positiveInt.describe(
              "Lifetime of that lock (in Redis, or held by the primary in worker mode without Redis): a holder that hangs or crashes delays the others at most this long (the primary releases a dead worker's at once)",
            ),
            waitMs: positiveInt.describe('Longest an instance or worker waits for another one before fetching itself'),
          })
          .strict(),
        purge: z
          .object({
            coalesceMs: nonNegativeInt.describe(
              'Admin purges arriving while one is carried out, or within this long after it, wait and are carried out together, once per selector (`all` subsumes the others): at most one batch of purges per window. `0`: only purges arriving while one runs are merged (see [the admin listener](operations.md#the-admin-listener))',
            ),
          })
          .strict(),
      })
      .strict(),
    // Issues 14 and 18: V8's limits, set when the process starts (src/runtime/heap-sizing.ts).
    heap: z
      .object({
        maxOldSpaceMiB: z
          .number()
          .int()
          .min(16)
          .nullable()
          .describe(
            "V8's old-space limit in MiB (`node --max-old-space-size`); `null` derives it from the memory tier: 128 MiB + twice the tier (384 for the default 128 MiB tier, 192 for the 32 MiB tier in front of Redis). Heap limits can only be set when node starts, so at start-up the process replaces itself once (`execve`: same pid, so PID 1 in a container stays PID 1) with `node --max-old-space-size=<this> --max-semi-space-size=<heap.maxSemiSpaceMiB>` on the same script, and logs a `heap` line with V8's resulting `heapLimitMiB`. A `--max-old-space-size` or `--max-semi-space-size` given on node's command line or in `NODE_OPTIONS` wins over this (only the missing flag is added). At least `16`. When the old space is full of live data, V8 stops the process with an out-of-memory error: raise it only with the container's memory",
          ),
        maxSemiSpaceMiB: z
          .number()
          .int()
          .min(1)
          .describe(
            "V8's semi-space in MiB (`node --max-semi-space-size`): the young generation, where per-request garbage dies, is three of them (so 48 MiB by default). The trade is CPU and latency against memory: a request that waits on I/O (a Redis-tier hit, a miss, the passthrough) keeps its short-lived objects alive while many others run, and a small young generation then promotes them to the old space at every scavenge, which costs mark-compacts later (issue 18: a Redis-tier hit took 111-113 µs CPU with `2` against 92-102 µs with `16`; a memory hit cost the same either way). A smaller one holds less memory (`2`, the default before issue 18, took about 20 MiB off the idle process and 13 to 49 MiB off the RSS peak under a flood of distinct misses; the young generation can take up to 3 MiB per MiB of this): size the container from it (see [Container memory](deployment.md#container-memory)). A `--max-semi-space-size` given on node's command line or in `NODE_OPTIONS` wins over this. At least `1`",
          ),
        markingStartPercent: z
          .number()
          .int()
          .min(0)
          .max(99)
          .describe(
            "When V8 starts marking the old space for a full collection, in percent of the old space's current limit (`node --incremental-marking-soft-trigger`); `0` leaves it to V8's own rule. That rule starts a marking as soon as the room left below the limit is smaller than the young generation, which with a 16 MiB semi-space and the small old space this process gives itself is always: then every scavenge that promotes anything (requests that wait on I/O: Redis-tier hits, misses, the passthrough) is followed by a mark-compact (issue 18: one per 1,200 Redis-tier hits with `0`, one per 6,300 to 6,800 with `40` to `80`; a higher value lets the heap grow further before a collection starts: under a flood of distinct misses `80` grew RSS about 12 MiB more than `0` or `60`). The limit V8 sets, and so the memory bound, is the same either way: a full collection starts when the old space nears it. A `--incremental-marking-soft-trigger` given on node's command line wins over this. `0` to `99`",
          ),
      })
      .strict(),
    finality: z.object({ burnConfirmations: nonNegativeInt.describe('Burn blocks on top before data is `final`') }).strict(),
    chainTip: z
      .object({
        pollIntervalMs: positiveInt.describe(
          "How often each upstream's `GET /extended` is polled (each upstream on its own schedule, the next poll this long after its previous one ended)",
        ),
        pollTimeoutMs: positiveInt.describe(
          "Longest one upstream's tip poll is waited for (at start-up and shutdown); a slower poll delays only that upstream's next one, never the tip seen from another",
        ),
        maxJumpBlocks: positiveInt.describe(
          'A tip whose Stacks or burn height is more than this ahead of the believed tip is not believed until confirmed (see [Freshness classes](caching-and-freshness.md#freshness-classes))',
        ),
        reorgMaxWalk: positiveInt.describe("How far back a reorg's fork point is searched; beyond it the fork is assumed there"),
      })
      .strict(),
    // Principal activity (issue 15): docs/caching-and-freshness.md "Principal activity (broadcasts and block learning)".
    activity: z
      .object({
        enabled: z
          .boolean()
          .describe(
            "Keep the principal-activity registry (broadcasts through the proxy, block learning, the mempool watcher); `false`: tip, TTL and revalidation alone, **without the guarantee that a sender's next nonce after its own broadcast is never stale** (on the wallet mix: 83 stale nonces in 60 s)",
          ),
        maxPrincipals: positiveInt.describe(
          'Principals remembered (at most about 400 bytes each: 40 MB at the default); the least recently touched is evicted and then counts as changed',
        ),
        settleMs: nonNegativeInt.describe(
          "After a broadcast the upstream accepted, answers about its principals (and the global mempool) validated within this long are not kept fresh: the upstream's API learns the transaction a moment after its node",
        ),
        coinbaseWindowBlocks: nonNegativeInt.describe(
          'Blocks for which principals a coinbase names count as touched by every block (matured miner rewards credit them without a transaction)',
        ),
        learnBlocks: z
          .boolean()
          .describe("Learn each new block's touched principals from the upstream (learned freshness); `false`: broadcasts (and the mempool watcher) only"),
        learnerMaxTxPages: positiveInt.describe(
          "Pages of a block's transactions (50 each) read at most; a larger block's touches are unknown (learning restarts)",
        ),
        learnerMaxEventRequests: nonNegativeInt.describe(
          "`tx/multiple` requests (20 transactions each) for a block's transaction events at most; beyond, the block's touches are unknown",
        ),
        broadcastCaptureBudgetBytes: positiveInt.describe(
          'Bytes of `POST /v2/transactions` bodies the process holds at once (all broadcasts together, up to ~4.26 MB each) to decode their principals; beyond, a body streams on to the upstream uncaptured and counts as undecodable (every principal marked changed)',
        ),
        watcherMaxPages: positiveInt.describe(
          "Requests one mempool-watcher poll may make to read a mempool larger than one page (50 transactions each, every page of the first page's ETag); a larger mempool is a change of unknown extent at every poll",
        ),
        watchMempool: z
          .boolean()
          .describe(
            "Poll the upstream's mempool list once per `chainTip.pollIntervalMs` (`If-None-Match`) so that mempool entries the mempool did not change stay fresh past their TTL; only with a single upstream",
          ),
      })
      .strict(),
    // The live chain (issue 16): push feed, Redis notifier, block warm-up, WebSocket fan-out (src/live/settings.ts).
    live: LiveSchema,
    passthrough: z
      .object({
        enabled: z.boolean().describe("Forward the paths on `passthrough.allowedPrefixes` to the upstream (when `false` they get the upstream's 404 shape)"),
        allowedPrefixes: z
          .array(pathPrefix)
          .describe('Paths forwarded: a prefix ending in `/` covers the paths below it, any other also that exact path; other paths get a local 404'),
        websockets: z.boolean().describe('Forward WebSocket upgrades on `passthrough.websocketPrefixes`'),
        websocketPrefixes: z.array(pathPrefix).describe('Paths WebSocket upgrades are forwarded on; other upgrades get a 404 and are closed'),
        websocketHandshakeTimeoutMs: positiveInt.describe("Longest wait for the upstream's answer to an upgrade; then `504` and the connection closes"),
        websocketIdleTimeoutMs: positiveInt.describe('A WebSocket tunnel with no traffic either way for this long is closed'),
        answerDeadlineMs: positiveInt.describe(
          'Longest a passthrough answer may take, head and body, from when the request leaves; a head not arrived by then: `504`; a body still coming: the client connection is cut ([Framing](security.md#framing))',
        ),
      })
      .strict(),
    // The wider read surface (issue 15): routes beyond the 13, cached by route family (src/surface/).
    surface: z
      .object({
        enabled: z
          .boolean()
          .describe(
            'Cache the [route families](caching-and-freshness.md#the-wider-read-surface-route-families) of the wider read surface (on paths the passthrough may forward); `false`: they pass through uncached',
          ),
        maxPostBodyBytes: positiveInt.describe(
          'Largest POST read body (`call-read`, `map_entry`, fee estimate) the proxy reads and caches; larger, chunked or non-JSON bodies pass through untouched',
        ),
      })
      .strict(),
    // Rate limits and client API keys (issue 9).
    rateLimit: z
      .object({
        enabled: z
          .boolean()
          .describe(
            'Limit requests per client (its API key, else its address); off by default; see [Rate limits and API keys](security.md#rate-limits-and-api-keys)',
          ),
        windowMs: positiveInt.describe('Length of one fixed budget window (windows start at multiples of it)'),
        anonymous: z
          .object({ limit: positiveInt.describe('Budget units per window of a client without an API key: per IPv4 address, per IPv6 `/64`') })
          .strict(),
        keyed: z.object({ limit: positiveInt.describe('Budget units per window of an API key that has no `limit` of its own') }).strict(),
        trustedProxies: z
          .array(z.string().refine((cidr) => parseCidr(cidr) !== undefined, 'must be an IPv4 or IPv6 address or CIDR (10.0.0.0/8, fd00::/8)'))
          .describe('Addresses or CIDRs (IPv4, IPv6; IPv4 also matches its `::ffff:` spelling) of the load balancers whose `X-Forwarded-For` is believed'),
        hitCost: positiveInt.describe('Units every limited request costs'),
        missCost: positiveInt.describe(
          'Units a request costs when the memory tier cannot answer it (read-through or passthrough; charged as `hitCost`, then the difference); at least `hitCost`',
        ),
        maxTrackedClients: positiveInt.describe(
          'Without Redis: clients whose budget one process tracks per window (about 200 bytes each); when full, the least recently seen client is forgotten and starts again from a fresh budget if it returns (see [Shared or per process](security.md#rate-limits-and-api-keys))',
        ),
      })
      .strict()
      .refine((limits) => limits.missCost >= limits.hitCost, { message: 'must not be less than rateLimit.hitCost', path: ['missCost'] }),
    apiKeys: ApiKeysSchema.describe(
      'Client API keys (hashes only) for [rate limits](security.md#rate-limits-and-api-keys); set through `API_KEYS_FILE` (which replaces this list); a malformed file stops start-up, exit code 2',
    ),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;

/** The memory tier's size: smaller in front of Redis, which holds the rest. */
export const memoryTierBytes = (config: Config): number => (config.redis.url ? config.cache.memory.maxBytesWithRedis : config.cache.memory.maxBytes);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const DEFAULT_CONFIG_PATH = join(projectRoot(), 'config', 'default.json');

type Json = Record<string, unknown>;

const isPlainObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Objects merge key by key; arrays and scalars replace. */
export function deepMerge(base: Json, override: Json): Json {
  const merged: Json = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    merged[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}

/** A JSON file's value; `label` names the file in errors ("config file", "API_KEYS_FILE"). */
function readJsonFile(path: string, label: string, readFile: (path: string) => string, check: (value: unknown) => void = () => undefined): unknown {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    throw new ConfigError(`cannot read ${label} ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
    check(value);
  } catch (error) {
    throw new ConfigError(`${label} ${path} is not valid JSON: ${(error as Error).message}`);
  }
  return value;
}

function readJson(path: string, readFile: (path: string) => string): Json {
  return readJsonFile(path, 'config file', readFile, (value) => {
    if (!isPlainObject(value)) throw new Error('top level must be an object');
  }) as Json;
}

function integerFromEnv(name: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isInteger(value)) throw new ConfigError(`${name} must be an integer, got "${text}"`);
  return value;
}

/** ADMIN_PORT, ADMIN_HOST and ADMIN_TOKEN (an empty token: the admin API is off). */
function adminFromEnv(env: Record<string, string | undefined>): Json {
  const admin: Json = {};
  if (env.ADMIN_PORT !== undefined) admin.port = integerFromEnv('ADMIN_PORT', env.ADMIN_PORT);
  if (env.ADMIN_HOST !== undefined) admin.host = env.ADMIN_HOST;
  if (env.ADMIN_TOKEN !== undefined) admin.token = env.ADMIN_TOKEN.trim() === '' ? null : env.ADMIN_TOKEN.trim();
  return admin;
}

/** API_KEYS_FILE: a JSON array of {"name", "sha256", "limit"?}; its entries are checked with the rest. */
function readApiKeys(path: string, readFile: (path: string) => string): unknown {
  const value = readJsonFile(path, 'API_KEYS_FILE', readFile);
  if (!Array.isArray(value)) throw new ConfigError(`API_KEYS_FILE ${path} must hold a JSON array of {"name", "sha256", "limit"?}`);
  return value;
}

/** The documented environment variables, as a partial config. */
function fromEnv(env: Record<string, string | undefined>): Json {
  const server: Json = {};
  const out: Json = {};
  if (env.PORT !== undefined) server.port = integerFromEnv('PORT', env.PORT);
  if (env.HOST !== undefined) server.host = env.HOST;
  if (env.WORKERS !== undefined) server.workers = integerFromEnv('WORKERS', env.WORKERS);
  if (Object.keys(server).length > 0) out.server = server;
  const upstream: Json = {};
  if (env.UPSTREAM_URLS !== undefined) {
    upstream.urls = env.UPSTREAM_URLS.split(',')
      .map((u) => u.trim())
      .filter((u) => u.length > 0);
  }
  if (env.UPSTREAM_API_KEY !== undefined) upstream.apiKey = env.UPSTREAM_API_KEY.trim() === '' ? null : env.UPSTREAM_API_KEY.trim();
  if (Object.keys(upstream).length > 0) out.upstream = upstream;
  if (env.REDIS_URL !== undefined) out.redis = { url: env.REDIS_URL.trim() === '' ? null : env.REDIS_URL.trim() };
  if (env.LOG_LEVEL !== undefined) out.logLevel = env.LOG_LEVEL;
  const admin = adminFromEnv(env);
  if (Object.keys(admin).length > 0) out.admin = admin;
  return out;
}

/** The environment variable that sets each setting, by its dotted key (the configuration page lists them too). */
export const ENV_NAMES: Readonly<Record<string, string>> = {
  'server.port': 'PORT',
  'server.host': 'HOST',
  'server.workers': 'WORKERS',
  'upstream.urls': 'UPSTREAM_URLS',
  'upstream.apiKey': 'UPSTREAM_API_KEY',
  'redis.url': 'REDIS_URL',
  logLevel: 'LOG_LEVEL',
  'admin.port': 'ADMIN_PORT',
  'admin.host': 'ADMIN_HOST',
  'admin.token': 'ADMIN_TOKEN',
  apiKeys: 'API_KEYS_FILE',
};

export function loadConfig(env: Record<string, string | undefined>, readFile: (path: string) => string = (path) => readFileSync(path, 'utf8')): Config {
  let merged = readJson(DEFAULT_CONFIG_PATH, readFile);
  if (env.CONFIG_FILE) merged = deepMerge(merged, readJson(env.CONFIG_FILE, readFile));
  merged = deepMerge(merged, fromEnv(env));
  if (env.API_KEYS_FILE) merged.apiKeys = readApiKeys(env.API_KEYS_FILE, readFile);
  return validated(merged);
}

/**
 * A config from an object with the keys a CONFIG_FILE takes, merged over config/default.json
 * and validated like loadConfig's; no environment variable is read (the package entry, index.ts).
 */
export function configFrom(settings: unknown, readFile: (path: string) => string = (path) => readFileSync(path, 'utf8')): Config {
  if (!isPlainObject(settings)) throw new ConfigError('the configuration must be an object with the keys a CONFIG_FILE takes');
  return validated(deepMerge(readJson(DEFAULT_CONFIG_PATH, readFile), settings));
}

function validated(merged: Json): Config {
  const result = ConfigSchema.safeParse(merged);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path
      .map(String)
      .join('.')
      .replace(/\.(\d+)$/, '[$1]');
    const envName = ENV_NAMES[path.replace(/\[\d+\]$/, '')] ?? ENV_NAMES[path.split(/[.[]/)[0] ?? ''];
    return `${path || '(root)'}${envName ? ` (${envName})` : ''}: ${issue.message}`;
  });
  throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
}

const REDACTED = '***';

const redactValues = (headers: Record<string, string>): Record<string, string> => Object.fromEntries(Object.keys(headers).map((name) => [name, REDACTED]));

/**
 * The settings worth logging at start-up, with credentials removed: the API key, the admin token, every
 * configured header value (any of them may be a credential) and URL passwords.
 */
export function redactedConfig(config: Config): Config {
  const strip = (url: string): string => {
    try {
      const parsed = new URL(url);
      if (parsed.password) parsed.password = '***';
      return parsed.toString();
    } catch {
      return url;
    }
  };
  return {
    ...config,
    upstream: {
      ...config.upstream,
      urls: config.upstream.urls.map(strip),
      apiKey: config.upstream.apiKey === null ? null : REDACTED,
      headers: redactValues(config.upstream.headers),
      headersByUrl: Object.fromEntries(Object.entries(config.upstream.headersByUrl).map(([origin, headers]) => [origin, redactValues(headers)])),
    },
    redis: { ...config.redis, url: config.redis.url === null ? null : redactRedisUrl(config.redis.url) },
    admin: { ...config.admin, token: config.admin.token === null ? null : REDACTED },
    apiKeys: config.apiKeys.map((key) => ({ ...key, sha256: REDACTED })),
  };
}
