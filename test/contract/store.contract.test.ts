/**
 * The CacheStore contract (src/cache/store.ts): the same cases, through the interface only,
 * against every store: MemoryStore and RedisStore on a real redis-server this suite starts.
 * A store keeps bytes and timestamps and never reads them, so whatever goes in comes out
 * unchanged, byte for byte and field for field, until it is deleted, overwritten or expires.
 *
 * Time: the memory store runs on an injected clock that `elapse` moves; Redis expires keys on
 * its own clock, so for it `elapse` does nothing and expiry is awaited with expect.poll on a
 * short retention (a key that is kept is asserted with a retention far longer than the test).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../src/cache/entry.js';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { RedisStore } from '../../src/cache/redis-store.js';
import type { CacheStore, Tier } from '../../src/cache/store.js';
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { startRedis, type TestRedis } from '../../testkit/index.js';
import { entry } from '../support/entries.js';

interface Subject {
  store: CacheStore;
  /** Lets `ms` pass on the store's clock, where the test controls it. An entry lives for its whole retention (Redis PX: expired once past it). */
  elapse(ms: number): void;
  /** Errors and decode failures the store reported; a store that works reports none. */
  problems: string[];
}

const MiB = 1024 * 1024;
/** Long enough that no test outlives it: an entry kept this long is simply kept. */
const LONG_RETENTION_MS = 10 * 60_000;
/** Short enough that Redis expires it quickly while the test polls. */
const SHORT_RETENTION_MS = 50;
const POLL = { timeout: 5_000, interval: 20 };

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** Telemetry that records what a working store never reports; `onStatus` sees connection changes. */
function telemetry(problems: string[], onStatus: (up: boolean) => void = () => undefined): Telemetry {
  return Object.assign(Object.create(noopTelemetry) as Telemetry, {
    storeError: (tier: Tier, operation: string, error: unknown) => problems.push(`${tier} ${operation}: ${String(error)}`),
    decodeFailed: (tier: Tier) => problems.push(`${tier}: decode failure`),
    redisStatusChanged: onStatus,
  });
}

async function openMemoryStore(): Promise<Subject> {
  let now = 1_700_000_000_000;
  const problems: string[] = [];
  const store = new MemoryStore({ maxBytes: 64 * MiB, maxEntryBytes: 16 * MiB, now: () => now, telemetry: telemetry(problems) });
  return { store, problems, elapse: (ms) => (now += ms) };
}

async function openRedisStore(autoPipelining: boolean): Promise<Subject> {
  const problems: string[] = [];
  let ready!: () => void;
  const connected = new Promise<void>((resolve) => (ready = resolve));
  // Commands are refused while disconnected (no offline queue): wait until the client is ready.
  const store = new RedisStore({ url: redis.url, commandTimeoutMs: 2_000, autoPipelining, telemetry: telemetry(problems, (up) => up && ready()) });
  await connected;
  return { store, problems, elapse: () => undefined };
}

const STORES: Array<{ name: string; tier: Tier; open: () => Promise<Subject> }> = [
  { name: 'MemoryStore', tier: 'memory', open: openMemoryStore },
  { name: 'RedisStore', tier: 'redis', open: () => openRedisStore(true) },
  { name: 'RedisStore without auto-pipelining', tier: 'redis', open: () => openRedisStore(false) },
];

/** Every optional field set, a body that is not UTF-8. */
const FULL: CacheEntry = entry(Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x22, 0x7d, 0x0a]), {
  status: 404,
  headers: { 'content-type': 'application/json; charset=utf-8', warning: '299 - "Deprecated"', 'x-api-version': 'v8.13.6' },
  upstreamEtag: '"0xf5be33ab"',
  etag: '"0xf5be33ab"',
  cls: 'final',
  validatedAt: 1_795_327_171_909,
  tipHash: '0xtip',
  tipHeight: 50,
  height: 42,
  listItem: { found: true, minedHeight: 7 },
});

/** Every byte value, then sequences that are invalid UTF-8 (lone continuation, overlong, truncated). */
const NOT_UTF8 = Buffer.concat([
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  Buffer.from([0x80, 0xc0, 0xaf, 0xe2, 0x82, 0xf8, 0x88, 0x80, 0x80, 0x80, 0xed, 0xa0, 0x80]),
]);

function expectSameEntry(actual: CacheEntry | undefined, expected: CacheEntry): void {
  expect(actual).toBeDefined();
  expect(Buffer.compare(actual!.body, expected.body)).toBe(0);
  expect(actual).toEqual(expected);
  // No field added or lost on the way (toEqual alone would let an undefined one through).
  expect(Object.keys(actual!).sort()).toEqual(Object.keys(expected).sort());
}

describe.each(STORES)('$name keeps the CacheStore contract', ({ tier, open }) => {
  let subject: Subject;
  let store: CacheStore;
  /** Keys unique to this test: the Redis database is shared by the whole file. */
  let key: (name: string) => string;

  beforeEach(async () => {
    subject = await open();
    store = subject.store;
    const prefix = randomUUID();
    key = (name) => `${prefix}:${name}`;
  });
  afterEach(async () => {
    await store.close();
    expect(subject.problems).toEqual([]);
  });

  it('names its tier', () => {
    expect(store.tier).toBe(tier);
  });

  it('answers undefined for a key it never stored', async () => {
    expect(await store.get(key('missing'))).toBeUndefined();
  });

  it('gives back every field of a stored entry, and its non-UTF-8 body byte for byte', async () => {
    await store.set(key('full'), FULL, null);
    expectSameEntry(await store.get(key('full')), FULL);
  });

  it('gives back a minimal entry without gaining optional fields, and an empty body', async () => {
    const minimal = entry('', { cls: 'mempool' });
    await store.set(key('minimal'), minimal, null);
    expectSameEntry(await store.get(key('minimal')), minimal);
  });

  it('keeps every byte value and invalid UTF-8 sequences exactly', async () => {
    const stored = entry(NOT_UTF8);
    await store.set(key('bytes'), stored, null);
    expectSameEntry(await store.get(key('bytes')), stored);
  });

  it('keeps a 1 MiB body exactly', async () => {
    const body = Buffer.alloc(MiB);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7919) & 0xff;
    const stored = entry(body);
    await store.set(key('large'), stored, null);
    expectSameEntry(await store.get(key('large')), stored);
  });

  it('keys are exact: cache-key punctuation, and keys that differ in one character, stay apart', async () => {
    const a = entry('{"a":1}');
    const b = entry('{"b":2}');
    await store.set(key('route:/extended/v1/tx/0xab?x=1&y=%20'), a, null);
    await store.set(key('route:/extended/v1/tx/0xab?x=1&y=%21'), b, null);
    expectSameEntry(await store.get(key('route:/extended/v1/tx/0xab?x=1&y=%20')), a);
    expectSameEntry(await store.get(key('route:/extended/v1/tx/0xab?x=1&y=%21')), b);
    expect(await store.get(key('route:/extended/v1/tx/0xab?x=1'))).toBeUndefined();
  });

  it('an overwrite replaces the entry', async () => {
    const first = entry('{"v":1}', { etag: '"1"' });
    const second = entry('{"v":2}', { etag: '"2"', status: 404, cls: 'final' });
    await store.set(key('k'), first, null);
    await store.set(key('k'), second, null);
    expectSameEntry(await store.get(key('k')), second);
  });

  it('deletes one key and leaves the others', async () => {
    await store.set(key('gone'), entry('{"gone":true}'), null);
    await store.set(key('kept'), entry('{"kept":true}'), null);
    await store.delete(key('gone'));
    expect(await store.get(key('gone'))).toBeUndefined();
    expectSameEntry(await store.get(key('kept')), entry('{"kept":true}'));
  });

  it('deleting a key it does not hold is not an error', async () => {
    await expect(store.delete(key('never-stored'))).resolves.toBeUndefined();
  });

  it('keeps an entry with retention null until it is evicted or deleted', async () => {
    await store.set(key('forever'), entry('{}'), null);
    subject.elapse(10 * 365 * 24 * 3_600_000);
    expectSameEntry(await store.get(key('forever')), entry('{}'));
  });

  it('keeps an entry while its retention lasts', async () => {
    await store.set(key('retained'), entry('{}'), LONG_RETENTION_MS);
    subject.elapse(LONG_RETENTION_MS - 1);
    expectSameEntry(await store.get(key('retained')), entry('{}'));
  });

  it('drops an entry once its retention has passed, and only that one', async () => {
    await store.set(key('short'), entry('{"short":1}'), SHORT_RETENTION_MS);
    await store.set(key('long'), entry('{"long":1}'), LONG_RETENTION_MS);
    await store.set(key('forever'), entry('{"forever":1}'), null);
    subject.elapse(SHORT_RETENTION_MS + 1);
    await expect.poll(() => store.get(key('short')), POLL).toBeUndefined();
    expectSameEntry(await store.get(key('long')), entry('{"long":1}'));
    expectSameEntry(await store.get(key('forever')), entry('{"forever":1}'));
  });

  it('an overwrite replaces the retention too: a retained entry overwritten with null is kept', async () => {
    await store.set(key('k'), entry('{"v":1}'), SHORT_RETENTION_MS);
    await store.set(key('k'), entry('{"v":2}'), null);
    await store.set(key('witness'), entry('{}'), SHORT_RETENTION_MS);
    subject.elapse(SHORT_RETENTION_MS + 1);
    // Once an entry stored at the same time with the same retention is gone, the first one's would be too.
    await expect.poll(() => store.get(key('witness')), POLL).toBeUndefined();
    expectSameEntry(await store.get(key('k')), entry('{"v":2}'));
  });

  it('an overwrite replaces the retention too: an entry kept with null, overwritten with a retention, expires', async () => {
    await store.set(key('k'), entry('{"v":1}'), null);
    await store.set(key('k'), entry('{"v":2}'), SHORT_RETENTION_MS);
    subject.elapse(SHORT_RETENTION_MS + 1);
    await expect.poll(() => store.get(key('k')), POLL).toBeUndefined();
  });
});
