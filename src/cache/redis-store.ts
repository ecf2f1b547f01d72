/**
 * The shared tier: Redis standalone, Sentinel or Cluster. The only module that imports
 * ioredis. Every command has a short timeout and nothing queues while disconnected, so
 * a dead Redis makes lookups miss quickly instead of making requests wait.
 */
import { randomUUID } from 'node:crypto';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { DecodedEntries } from './decoded-entries.js';
import { decodeEntry, encodeEntry, type CacheEntry } from './entry.js';
import { parseRedisUrl } from './redis-url.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { CacheStore, SharedLock } from './store.js';

export interface RedisClientOptions {
  url: string;
  commandTimeoutMs: number;
  /**
   * ioredis auto-pipelining: the commands issued in one event-loop tick (one per concurrent
   * request on a busy proxy) go out in one socket write and their replies are read in one go,
   * instead of a write and a read per command. Off for a subscriber (it sends nothing per request).
   */
  autoPipelining: boolean;
  /**
   * Who keeps `commandTimeoutMs`: `ioredis` (its option: a timer set and cleared per command) or
   * `caller`, who sweeps the client's queue itself (CommandDeadlines; standalone and Sentinel
   * clients only, a Cluster always uses ioredis's). Default `ioredis`.
   */
  deadlines?: 'ioredis' | 'caller';
}

export interface RedisStoreOptions extends RedisClientOptions {
  telemetry?: Telemetry;
}

type Client = Redis | Cluster;

/**
 * `redis://` / `rediss://` (standalone), `redis+sentinel://h1:p1,h2:p2/<master-name>`,
 * `redis+cluster://h1:p1,h2:p2`. Credentials in the URL apply to every node.
 */
export function createRedisClient({ url, commandTimeoutMs, autoPipelining, deadlines = 'ioredis' }: RedisClientOptions): Client {
  const common: RedisOptions = {
    enableAutoPipelining: autoPipelining,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs * 4, 1000),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    lazyConnect: false,
    // Keep trying forever, at most once a second: Redis coming back must be picked up.
    retryStrategy: (times) => Math.min(times * 100, 1000),
  };
  const parsed = parseRedisUrl(url);
  if (!parsed) throw new Error('invalid Redis URL');
  const auth = { username: parsed.username, password: parsed.password };
  // Only the Redis class sends every command through its own queue, where the caller's sweep finds it.
  const own = deadlines === 'caller' ? { ...common, commandTimeout: undefined } : common;
  if (parsed.mode === 'sentinel') {
    return new Redis({ ...own, ...auth, sentinels: parsed.hosts, name: parsed.path || 'mymaster' });
  }
  if (parsed.mode === 'cluster') {
    // A Cluster pipelines per node itself (its own option): the nodes' connections must not as well.
    return new Cluster(parsed.hosts, {
      redisOptions: { ...common, ...auth, enableAutoPipelining: false },
      enableOfflineQueue: false,
      enableAutoPipelining: autoPipelining,
    });
  }
  return new Redis(url, own);
}

/** How many sweeps a command timeout is cut into: a command times out within its last tenth. */
const SWEEPS_PER_TIMEOUT = 10;
const SEEN_AT = Symbol('first seen by a deadline sweep');
type Swept = { isSettled?: boolean; reject(error: Error): void; [SEEN_AT]?: number };

/**
 * The command timeout of a standalone or Sentinel client, kept by one timer for all commands
 * instead of ioredis's `commandTimeout`, which sets a timer per command and clears it with a
 * `delete` that turns every Command into a slow dictionary object: on a Redis-tier hit that
 * was a timer, its closure and the dictionary per GET, most of the hit's ioredis cost and
 * garbage (issue 18 profile). Every tenth of the timeout, the sweep walks the commands that
 * await a reply (ioredis's command queue: sent, in order) and notes when it first saw each;
 * one seen a timeout less a tenth ago fails exactly as ioredis's timer fails it ("Command timed
 * out"). A command is sent before the sweep that first sees it, and each is failed once the
 * sweeps have seen it for nine tenths of the timeout, by the next sweep: between 0.9 and 1 times
 * the timeout after it was sent (later only when the event loop itself is late, as ioredis's
 * timers would be). Its late reply then settles nothing, as with ioredis's own timeout.
 */
export class CommandDeadlines {
  private readonly timer: NodeJS.Timeout;
  private readonly overdueAfterMs: number;

  constructor(
    private readonly client: Redis,
    timeoutMs: number,
  ) {
    const periodMs = timeoutMs / SWEEPS_PER_TIMEOUT;
    this.overdueAfterMs = timeoutMs - periodMs;
    this.timer = setInterval(() => this.sweep(), Math.max(1, periodMs)).unref();
  }

  /** Fails the commands past their deadline; the timer calls it. */
  sweep(): void {
    const queue = this.client.commandQueue;
    const length = queue.length;
    if (length === 0) return;
    const now = performance.now();
    for (let i = 0; i < length; i++) {
      const command = queue.peekAt(i)?.command as Swept | undefined;
      if (!command || command.isSettled) continue;
      const seen = command[SEEN_AT];
      if (seen === undefined) command[SEEN_AT] = now;
      else if (now - seen >= this.overdueAfterMs) command.reject(new Error('Command timed out'));
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** One entry of a Redis stream: its id and its fields as [name, value, name, value, ...]. */
export interface StreamEntry {
  id: string;
  fields: string[];
}

/**
 * Reads one Redis stream with XREAD BLOCK on a connection of its own (a blocking read holds its
 * connection): the upstream's change notifier (src/live/redis-notifier-feed.ts). Commands fail
 * at once while the connection is down (no offline queue); the caller waits and reads again.
 */
export class RedisStreamReader {
  private readonly client: Client;

  constructor(options: RedisClientOptions) {
    this.client = createRedisClient({ ...options, autoPipelining: false });
    // Without a listener ioredis would print every reconnect failure; the reader's caller retries.
    this.client.on('error', () => undefined);
  }

  get connected(): boolean {
    return this.client.status === 'ready';
  }

  /** Resolves when the connection is up, after `ms` whatever its state, or at once when `signal` aborts (a shutdown). */
  whenConnected(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.connected || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.client.off('ready', done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.client.once('ready', done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The id of the stream's last entry, or `0-0` while it has none. */
  async lastId(stream: string): Promise<string> {
    const last = await this.client.xrevrange(stream, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  /** Up to `count` entries after `afterId`, waiting up to `blockMs` for one; none when none came. */
  async read(stream: string, afterId: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    const reply = (await this.client.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', stream, afterId)) as [string, [string, string[]][]][] | null;
    return (reply?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, fields }));
  }

  close(): void {
    this.client.disconnect();
  }
}

// Keys a SCAN step looks at: big enough to walk a large keyspace quickly, small enough that one step never blocks Redis long.
const SCAN_BATCH = 1000;

// Deletes the lock only if it still holds our token (it may have expired and been retaken).
const RELEASE_LOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export class RedisStore implements CacheStore, SharedLock {
  readonly tier = 'redis' as const;
  private readonly client: Client;

  private readonly telemetry: Telemetry;
  private readonly decoded = new DecodedEntries();
  /** The command timeout, kept by one sweep (standalone and Sentinel); a Cluster keeps it per command itself. */
  private readonly deadlines: CommandDeadlines | undefined;

  constructor(private readonly options: RedisStoreOptions) {
    this.telemetry = options.telemetry ?? noopTelemetry;
    this.client = createRedisClient({ ...options, deadlines: 'caller' });
    this.deadlines = this.client instanceof Redis ? new CommandDeadlines(this.client, options.commandTimeoutMs) : undefined;
    this.client.on('ready', () => this.telemetry.redisStatusChanged(true));
    this.client.on('end', () => this.telemetry.redisStatusChanged(false));
    this.client.on('close', () => this.telemetry.redisStatusChanged(false));
    // Without a listener ioredis would print every reconnect failure as an unhandled error.
    this.client.on('error', (error: unknown) => this.telemetry.storeError('redis', 'connection', error));
  }

  /**
   * The Redis-tier hit: one getBuffer (the reply's bytes, never a string), timed and decoded in
   * its one continuation, without the async layers `timed` adds to the other commands.
   */
  get(key: string): Promise<CacheEntry | undefined> {
    const started = performance.now();
    const timed = (): void => this.telemetry.redisCommand('get', (performance.now() - started) / 1000);
    return this.client.getBuffer(key).then(
      (bytes) => {
        timed();
        if (!bytes) return undefined;
        const entry = this.decoded.decode(key, bytes, decodeEntry);
        if (!entry) this.telemetry.decodeFailed('redis');
        return entry;
      },
      (error: unknown) => {
        timed();
        throw error;
      },
    );
  }

  async set(key: string, entry: CacheEntry, retainMs: number | null): Promise<void> {
    const bytes = encodeEntry(entry);
    await this.timed('set', () => (retainMs === null ? this.client.set(key, bytes) : this.client.set(key, bytes, 'PX', Math.max(1, Math.round(retainMs)))));
  }

  async delete(key: string): Promise<void> {
    await this.timed('del', () => this.client.del(key));
  }

  async acquire(key: string, ttlMs: number): Promise<(() => Promise<void>) | 'busy' | undefined> {
    const token = randomUUID();
    try {
      const reply = await this.timed('set', () => this.client.set(key, token, 'PX', ttlMs, 'NX'));
      if (reply !== 'OK') return 'busy';
    } catch {
      return undefined;
    }
    return async () => {
      try {
        await this.timed('eval', () => this.client.eval(RELEASE_LOCK, 1, key, token));
      } catch {
        // It expires by itself.
      }
    };
  }

  async isHeld(key: string): Promise<boolean> {
    try {
      return (await this.timed('exists', () => this.client.exists(key))) === 1;
    } catch {
      return false;
    }
  }

  /**
   * Keys in the database, Redis' used_memory and its evicted_keys counter, for metrics;
   * undefined when Redis does not answer. (Cluster: the node ioredis routes the command to.)
   */
  /** maxBytes: Redis' maxmemory (0: no bound set in Redis). */
  async stats(): Promise<{ keys: number; bytes: number; evictedKeys: number; maxBytes: number } | undefined> {
    try {
      const [keys, memory, stats] = await Promise.all([
        this.timed('dbsize', () => this.client.dbsize()),
        this.timed('info', () => this.client.info('memory')),
        this.timed('info', () => this.client.info('stats')),
      ]);
      const field = (text: string, name: string) => Number(new RegExp(`${name}:(\\d+)`).exec(text)?.[1] ?? Number.NaN);
      return { keys, bytes: field(memory, 'used_memory'), evictedKeys: field(stats, 'evicted_keys'), maxBytes: field(memory, 'maxmemory') };
    } catch {
      return undefined;
    }
  }

  /**
   * Deletes the keys a purge names (an admin purge): exact keys as they are, patterns through
   * SCAN MATCH in batches (never KEYS, which blocks Redis), each batch filtered by `matches`
   * and UNLINKed. In a cluster every master is scanned. Returns how many keys were deleted.
   */
  async deleteMatching(target: { keys?: string[]; patterns: string[]; matches: (key: string) => boolean }): Promise<number> {
    let deleted = 0;
    const unlink = async (node: Redis, keys: string[]) => {
      // One key per command: in a cluster, keys of one batch may live in different slots.
      for (const key of keys) deleted += await this.timed('unlink', () => node.unlink(key));
    };
    const nodes = this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
    if (target.keys) {
      // A Cluster client routes each key to its slot; a standalone one is the node itself.
      for (const key of target.keys) deleted += await this.timed('unlink', () => this.client.unlink(key));
      if (target.patterns.length === 0) return deleted;
    }
    for (const node of nodes) {
      for (const pattern of target.patterns) {
        let cursor = '0';
        do {
          const [next, keys] = await this.timed('scan', () => node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_BATCH));
          cursor = next;
          const doomed = keys.filter(target.matches);
          if (doomed.length > 0) await unlink(node, doomed);
        } while (cursor !== '0');
      }
    }
    return deleted;
  }

  /** Publishes `message` on `channel` (the purge channel: redis-purge-channel.ts listens). */
  async publish(channel: string, message: string): Promise<void> {
    await this.timed('publish', () => this.client.publish(channel, message));
  }

  async close(): Promise<void> {
    try {
      await this.client.quit(); // swept as well: a hung Redis fails it within the timeout
    } catch {
      this.client.disconnect();
    } finally {
      this.deadlines?.stop();
    }
  }

  private async timed<T>(command: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      this.telemetry.redisCommand(command, (performance.now() - started) / 1000);
    }
  }
}
