/**
 * Settings: defaults from config/default.json, a CONFIG_FILE merged over them, the documented
 * environment variables last; a bad setting stops start-up with a message that names it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactedConfig, type Config } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

const DEFAULT_PATH = join(projectRoot(), 'config', 'default.json');
const DEFAULTS = JSON.parse(readFileSync(DEFAULT_PATH, 'utf8')) as Config;
const CONFIG_FILE = '/etc/stacks-cache-proxy/config.json';

/** The real defaults, plus one injected config file. */
function withFile(text: string): (path: string) => string {
  return (path) => {
    if (path === CONFIG_FILE) return text;
    if (path === DEFAULT_PATH) return readFileSync(path, 'utf8');
    throw new Error(`ENOENT: no such file, open '${path}'`);
  };
}

function loadError(env: Record<string, string | undefined>, readFile?: (path: string) => string): ConfigError {
  try {
    loadConfig(env, readFile);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('loadConfig did not throw');
}

describe('defaults', () => {
  it('loads config/default.json as it is without any environment', () => {
    expect(loadConfig({})).toEqual(DEFAULTS);
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.server.port).toBe(8080);
    expect(config.upstream.urls).toEqual(['https://api.hiro.so']);
    expect(config.redis.url).toBeNull();
    expect(config.cache.ttl).toEqual({
      tipSafetyMs: 60_000,
      mempoolMs: 2_000,
      staleWhileRevalidateMs: 2_000,
      retainExpiredMs: 300_000,
      learnedMaxMs: 120_000,
      mempoolFeesMaxAgeMs: 5_000,
    });
    expect(config.upstream).toMatchObject({
      maxAttempts: 2,
      failureThreshold: 3,
      cooldownMs: 5_000,
      maxLagBlocks: 3,
      retryAfterDefaultMs: 5_000,
      retryAfterMaxMs: 60_000,
    });
    expect(config.upstream).toMatchObject({ apiKey: null, headers: {}, headersByUrl: {} });
    expect(config.cache.sharedSingleFlight).toEqual({ enabled: true, lockTtlMs: 5_000, waitMs: 3_000 });
    expect(config.cache.staleIfErrorMs).toBe(300_000);
    expect(config.finality.burnConfirmations).toBe(6);
  });

  it('reads the defaults through the injected readFile', () => {
    const read: string[] = [];
    loadConfig({}, (path) => {
      read.push(path);
      return readFileSync(path, 'utf8');
    });
    expect(read).toEqual([DEFAULT_PATH]);
  });

  it('ignores environment variables it does not document', () => {
    expect(loadConfig({ NODE_ENV: 'production', CACHE_TTL: '5', npm_config_port: '1' })).toEqual(DEFAULTS);
  });
});

describe('environment overrides', () => {
  it('applies PORT, HOST, UPSTREAM_URLS, REDIS_URL and LOG_LEVEL', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      UPSTREAM_URLS: 'http://api-1:3999, http://api-2:3999,',
      REDIS_URL: 'redis://redis:6379',
      LOG_LEVEL: 'debug',
    });
    expect(config.server).toEqual({ ...DEFAULTS.server, port: 9000, host: '127.0.0.1' });
    expect(config.upstream).toEqual({ ...DEFAULTS.upstream, urls: ['http://api-1:3999', 'http://api-2:3999'] });
    expect(config.redis).toEqual({ ...DEFAULTS.redis, url: 'redis://redis:6379' });
    expect(config.logLevel).toBe('debug');
    expect(config.cache).toEqual(DEFAULTS.cache);
  });

  it('accepts PORT=0 (pick a free port)', () => {
    expect(loadConfig({ PORT: '0' }).server.port).toBe(0);
  });

  it('turns an empty REDIS_URL into memory only', () => {
    expect(loadConfig({ REDIS_URL: '' }).redis.url).toBeNull();
    expect(loadConfig({ REDIS_URL: '  ' }).redis.url).toBeNull();
  });

  it.each(['redis://h:6379', 'rediss://h:6380', 'redis+sentinel://h1:26379/mymaster', 'redis+cluster://h1:7000'])('accepts the Redis URL %s', (url) => {
    expect(loadConfig({ REDIS_URL: url }).redis.url).toBe(url);
  });
});

describe('CONFIG_FILE', () => {
  it('merges the file over the defaults key by key', () => {
    const file = JSON.stringify({ cache: { ttl: { mempoolMs: 5_000 } }, server: { port: 1234 } });
    const config = loadConfig({ CONFIG_FILE }, withFile(file));
    expect(config.cache.ttl).toEqual({ ...DEFAULTS.cache.ttl, mempoolMs: 5_000 });
    expect(config.cache.memory).toEqual(DEFAULTS.cache.memory);
    expect(config.server).toEqual({ ...DEFAULTS.server, port: 1234 });
  });

  it('replaces arrays instead of merging them', () => {
    const file = JSON.stringify({ upstream: { urls: ['http://only:3999'] } });
    expect(loadConfig({ CONFIG_FILE }, withFile(file)).upstream.urls).toEqual(['http://only:3999']);
  });

  it('lets the environment win over the file', () => {
    const file = JSON.stringify({ server: { port: 1234, host: 'file-host' }, logLevel: 'warn' });
    const config = loadConfig({ CONFIG_FILE, PORT: '9000' }, withFile(file));
    expect(config.server.port).toBe(9000);
    expect(config.server.host).toBe('file-host');
    expect(config.logLevel).toBe('warn');
  });

  it('takes redis.url from the file, and lets an empty REDIS_URL turn it off', () => {
    const file = JSON.stringify({ redis: { url: 'rediss://cache:6380' } });
    expect(loadConfig({ CONFIG_FILE }, withFile(file)).redis.url).toBe('rediss://cache:6380');
    expect(loadConfig({ CONFIG_FILE, REDIS_URL: '' }, withFile(file)).redis.url).toBeNull();
  });

  it('names a file it cannot read', () => {
    const error = loadError({ CONFIG_FILE: '/nope.json' }, withFile('{}'));
    expect(error.message).toContain('cannot read config file /nope.json');
  });

  it.each([
    ['not JSON', '{"server": '],
    ['an array', '[]'],
    ['a string', '"x"'],
    ['null', 'null'],
  ])('rejects a file that is %s', (_name, text) => {
    const error = loadError({ CONFIG_FILE }, withFile(text));
    expect(error.message).toContain(`config file ${CONFIG_FILE} is not valid JSON`);
  });
});

describe('bad settings name the setting', () => {
  it.each([
    [{ UPSTREAM_URLS: 'ftp://api:21' }, ['upstream.urls[0]', 'UPSTREAM_URLS', 'must be an http(s) URL']],
    [{ UPSTREAM_URLS: 'http://ok:3999,not a url' }, ['upstream.urls[1]', 'UPSTREAM_URLS']],
    [{ UPSTREAM_URLS: '' }, ['upstream.urls', 'UPSTREAM_URLS']],
    [{ UPSTREAM_URLS: ' , ' }, ['upstream.urls', 'UPSTREAM_URLS']],
    [{ PORT: 'abc' }, ['PORT', '"abc"']],
    [{ PORT: '' }, ['PORT']],
    [{ PORT: '80.5' }, ['PORT']],
    [{ PORT: '70000' }, ['server.port', 'PORT']],
    [{ PORT: '-1' }, ['server.port', 'PORT']],
    [{ HOST: '' }, ['server.host', 'HOST']],
    [{ REDIS_URL: 'http://redis:6379' }, ['redis.url', 'REDIS_URL', 'redis://']],
    [{ REDIS_URL: 'localhost:6379' }, ['redis.url', 'REDIS_URL']],
    [{ LOG_LEVEL: 'loud' }, ['logLevel', 'LOG_LEVEL']],
    [{ UPSTREAM_URLS: 'http://api:3999/api' }, ['upstream.urls[0] (UPSTREAM_URLS)', 'without a path', '"/api"', 'a path prefix is not supported']],
    [{ UPSTREAM_URLS: 'http://ok:3999,https://api.example.com/extended/' }, ['upstream.urls[1] (UPSTREAM_URLS)', '"/extended/"']],
    [{ UPSTREAM_URLS: 'http://api:3999/?key=1' }, ['upstream.urls[0]', '"/?key=1"']],
    [{ UPSTREAM_API_KEY: 'key\u0007bell' }, ['upstream.apiKey (UPSTREAM_API_KEY)', 'control characters']],
  ] as const)('env %j', (env, fragments) => {
    const error = loadError(env);
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });

  it.each([
    [{ cache: { ttl: { tipSafetyMs: -1 } } }, ['cache.ttl.tipSafetyMs']],
    [{ cache: { ttl: { mempoolMs: 0 } } }, ['cache.ttl.mempoolMs']],
    [{ cache: { ttl: { retainExpiredMs: -5 } } }, ['cache.ttl.retainExpiredMs']],
    [{ cache: { staleIfErrorMs: 1.5 } }, ['cache.staleIfErrorMs']],
    [{ cache: { keyPrefix: 'a b' } }, ['cache.keyPrefix']],
    [{ cache: { memory: { maxBytes: '1GB' } } }, ['cache.memory.maxBytes']],
    [{ finality: { burnConfirmations: -1 } }, ['finality.burnConfirmations']],
    [{ passthrough: { enabled: 'yes' } }, ['passthrough.enabled']],
    [{ upstream: { urls: [] } }, ['upstream.urls']],
    [{ cache: { ttl: { tipSafteyMs: 1 } } }, ['cache.ttl', 'tipSafteyMs']],
    [{ redis: { password: 'x' } }, ['redis', 'password']],
    [{ cacheTtl: 5 }, ['(root)', 'cacheTtl']],
    [{ upstream: { maxAttempts: 3 } }, ['upstream.maxAttempts', 'at most two requests']],
    [{ upstream: { retryAfterMaxMs: 0 } }, ['upstream.retryAfterMaxMs']],
    [{ upstream: { headers: { Host: 'evil.example' } } }, ['upstream.headers.Host', 'may not be configured']],
    [{ upstream: { headers: { Connection: 'close' } } }, ['upstream.headers.Connection', 'hop-by-hop']],
    [{ upstream: { headers: { 'transfer-encoding': 'chunked' } } }, ['upstream.headers.transfer-encoding', 'hop-by-hop']],
    [{ upstream: { headers: { 'if-none-match': '"x"' } } }, ['upstream.headers.if-none-match', 'change what the upstream answers']],
    [{ upstream: { headers: { 'bad name': 'x' } } }, ['not a valid header name']],
    [{ upstream: { headers: { 'x-tenant': 'a\r\nx-injected: 1' } } }, ['upstream.headers.x-tenant', 'control character']],
    [
      { upstream: { headersByUrl: { 'https://other.example': { 'x-a': '1' } } } },
      ['upstream.headersByUrl', 'https://other.example is not one of upstream.urls'],
    ],
    [{ upstream: { headersByUrl: { 'https://api.hiro.so': { upgrade: 'websocket' } } } }, ['upgrade', 'hop-by-hop']],
  ])('file %j', (file, fragments) => {
    const error = loadError({ CONFIG_FILE }, withFile(JSON.stringify(file)));
    expect(error.message.startsWith('invalid configuration')).toBe(true);
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });

  it('lists every bad setting at once', () => {
    const error = loadError({ CONFIG_FILE, LOG_LEVEL: 'loud' }, withFile(JSON.stringify({ cache: { ttl: { mempoolMs: -1 } } })));
    expect(error.message).toContain('logLevel');
    expect(error.message).toContain('cache.ttl.mempoolMs');
  });
});

describe('upstream credentials and headers', () => {
  it('reads UPSTREAM_API_KEY into upstream.apiKey, trimmed; empty means none', () => {
    expect(loadConfig({ UPSTREAM_API_KEY: ' k-123 ' }).upstream.apiKey).toBe('k-123');
    expect(loadConfig({ UPSTREAM_API_KEY: '' }).upstream.apiKey).toBeNull();
  });

  it('lower-cases configured header names and keys per-URL headers by origin', () => {
    const file = { upstream: { headers: { 'X-Tenant': 'a' }, headersByUrl: { 'http://api-2:3999/': { 'X-Api-Key': 'other' } } } };
    const config = loadConfig({ CONFIG_FILE, UPSTREAM_URLS: 'http://api-1:3999,http://api-2:3999' }, withFile(JSON.stringify(file)));
    expect(config.upstream.headers).toEqual({ 'x-tenant': 'a' });
    expect(config.upstream.headersByUrl).toEqual({ 'http://api-2:3999': { 'x-api-key': 'other' } });
  });

  it('never puts the key or a configured header value in an error message', () => {
    const error = loadError({ CONFIG_FILE, UPSTREAM_API_KEY: 'sekrit\u0000' }, withFile(JSON.stringify({ upstream: { headers: { 'x-token': 'hidden\n' } } })));
    expect(error.message).not.toContain('sekrit');
    expect(error.message).not.toContain('hidden');
  });
});

describe('redactedConfig', () => {
  it('hides the API key and every configured header value', () => {
    const file = { upstream: { headers: { authorization: 'Bearer header-secret' }, headersByUrl: { 'https://api.hiro.so': { 'x-tenant': 'tenant-secret' } } } };
    const config = loadConfig({ CONFIG_FILE, UPSTREAM_API_KEY: 'key-secret' }, withFile(JSON.stringify(file)));
    const redacted = redactedConfig(config);
    const text = JSON.stringify(redacted);
    for (const secret of ['key-secret', 'header-secret', 'tenant-secret']) expect(text).not.toContain(secret);
    expect(redacted.upstream).toMatchObject({
      apiKey: '***',
      headers: { authorization: '***' },
      headersByUrl: { 'https://api.hiro.so': { 'x-tenant': '***' } },
    });
    expect(config.upstream.apiKey).toBe('key-secret');
  });

  it('hides passwords in upstream and Redis URLs and keeps everything else', () => {
    const config = loadConfig({
      UPSTREAM_URLS: 'https://user:upstream-secret@api.example.com,http://plain:3999',
      REDIS_URL: 'redis://:redis-secret@cache:6379/0',
    });
    const redacted = redactedConfig(config);
    const text = JSON.stringify(redacted);
    expect(text).not.toContain('upstream-secret');
    expect(text).not.toContain('redis-secret');
    expect(redacted.upstream.urls[0]).toContain('user:***@api.example.com');
    expect(redacted.upstream.urls[1]).toMatch(/^http:\/\/plain:3999\/?$/);
    expect(redacted.redis.url).toBe('redis://:***@cache:6379/0');
    expect({ ...redacted, upstream: config.upstream, redis: config.redis }).toEqual(config);
  });

  it('hides the password on rediss, Sentinel and Cluster URLs, host lists included', () => {
    for (const url of [
      'rediss://admin:tls-secret@cache:6380',
      'redis+sentinel://:sentinel-secret@sentinel-1:26379/mymaster',
      'redis+sentinel://:sentinel-secret@h1:26379,h2:26379/mymaster',
      'redis+cluster://admin:cluster-secret@h1:7000,h2:7001',
    ]) {
      const redacted = redactedConfig(loadConfig({ REDIS_URL: url }));
      expect(redacted.redis.url, url).not.toMatch(/secret/);
      expect(redacted.redis.url, url).toContain('***');
    }
  });

  it('leaves the input config untouched', () => {
    const config = loadConfig({ REDIS_URL: 'redis://:redis-secret@cache:6379' });
    redactedConfig(config);
    expect(config.redis.url).toBe('redis://:redis-secret@cache:6379');
  });

  it('keeps a null Redis URL null', () => {
    expect(redactedConfig(loadConfig({})).redis.url).toBeNull();
  });
});

describe('the admin listener settings', () => {
  it('default to 127.0.0.1:9091, the admin API off and /metrics off the public port', () => {
    const config = loadConfig({});
    expect(config.admin).toEqual({ port: 9091, host: '127.0.0.1', token: null });
    expect(config.metrics).toEqual({ onPublicPort: false });
  });

  it('come from ADMIN_PORT, ADMIN_HOST and ADMIN_TOKEN; an empty token turns the API off', () => {
    const config = loadConfig({ ADMIN_PORT: '9999', ADMIN_HOST: '0.0.0.0', ADMIN_TOKEN: ' admin-secret-0123456789 ' });
    expect(config.admin).toEqual({ port: 9999, host: '0.0.0.0', token: 'admin-secret-0123456789' });
    expect(loadConfig({ ADMIN_TOKEN: '' }).admin.token).toBeNull();
  });

  it('refuses a bad port and a short token, naming the variable', () => {
    expect(() => loadConfig({ ADMIN_PORT: 'x' })).toThrow('ADMIN_PORT must be an integer, got "x"');
    expect(() => loadConfig({ ADMIN_PORT: '70000' })).toThrow('admin.port (ADMIN_PORT)');
    expect(() => loadConfig({ ADMIN_TOKEN: 'short' })).toThrow('admin.token (ADMIN_TOKEN): must be at least 16 characters');
  });

  it('never shows the token in the logged settings', () => {
    const config = loadConfig({ ADMIN_TOKEN: 'admin-secret-0123456789' });
    const redacted = redactedConfig(config);
    expect(JSON.stringify(redacted)).not.toContain('admin-secret');
    expect(redacted.admin).toEqual({ port: 9091, host: '127.0.0.1', token: '***' });
    expect(config.admin.token).toBe('admin-secret-0123456789');
  });
});

describe('rate limits and API_KEYS_FILE (issue 9)', () => {
  const KEYS_FILE = '/etc/stacks-cache-proxy/keys.json';
  const HASH = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
  const withKeys = (text: string) => (path: string) => (path === KEYS_FILE ? text : withFile('{}')(path));

  it('is off by default, with no keys', () => {
    const config = loadConfig({});
    expect(config.rateLimit.enabled).toBe(false);
    expect(config.rateLimit).toMatchObject({ hitCost: 1, missCost: 1, trustedProxies: [] });
    expect(config.apiKeys).toEqual([]);
  });

  it('reads API_KEYS_FILE, lower-casing hashes', () => {
    const config = loadConfig(
      { API_KEYS_FILE: KEYS_FILE },
      withKeys(
        JSON.stringify([
          { name: 'a', sha256: HASH.toUpperCase(), limit: 9 },
          { name: 'b', sha256: HASH.replace('b', 'c') },
        ]),
      ),
    );
    expect(config.apiKeys).toEqual([
      { name: 'a', sha256: HASH, limit: 9 },
      { name: 'b', sha256: HASH.replace('b', 'c') },
    ]);
    expect(redactedConfig(config).apiKeys).toEqual([
      { name: 'a', sha256: '***', limit: 9 },
      { name: 'b', sha256: '***' },
    ]);
  });

  it.each([
    ['not JSON', '[{', 'API_KEYS_FILE /etc/stacks-cache-proxy/keys.json is not valid JSON'],
    ['not an array', '{"name":"a"}', 'API_KEYS_FILE /etc/stacks-cache-proxy/keys.json must hold a JSON array'],
    ['a raw key instead of its hash', '[{"name":"a","sha256":"s3cret"}]', 'apiKeys.0.sha256 (API_KEYS_FILE): must be the SHA-256'],
    ['an unknown field', `[{"name":"a","sha256":"${HASH}","key":"s3cret"}]`, 'apiKeys[0] (API_KEYS_FILE): Unrecognized key: "key"'],
    ['a zero limit', `[{"name":"a","sha256":"${HASH}","limit":0}]`, 'apiKeys.0.limit (API_KEYS_FILE)'],
    [
      'a duplicate hash',
      `[{"name":"a","sha256":"${HASH}"},{"name":"b","sha256":"${HASH}"}]`,
      'apiKeys.1.sha256 (API_KEYS_FILE): the same key hash as entry 0 ("a")',
    ],
  ])('refuses a key file with %s', (_why, text, message) => {
    expect(loadError({ API_KEYS_FILE: KEYS_FILE }, withKeys(text)).message).toContain(message);
  });

  it('refuses a missing key file, naming it', () => {
    expect(loadError({ API_KEYS_FILE: '/nope/keys.json' }).message).toContain('cannot read API_KEYS_FILE /nope/keys.json');
  });

  it('refuses a trusted proxy that is not a CIDR, and a miss cheaper than a hit', () => {
    const bad = JSON.stringify({ rateLimit: { trustedProxies: ['10.0.0.0/8', 'lb.internal'], hitCost: 2, missCost: 1 } });
    const message = loadError({ CONFIG_FILE }, withFile(bad)).message;
    expect(message).toContain('rateLimit.trustedProxies[1]: must be an IPv4 or IPv6 address or CIDR');
    expect(message).toContain('rateLimit.missCost: must not be less than rateLimit.hitCost');
  });
});
