/**
 * The measurement behind the memory tier's per-entry accounting (src/cache/entry.ts
 * ENTRY_OVERHEAD_BYTES) and its sweep of expired entries (src/cache/memory-store.ts):
 *   npm run build && node_modules/.bin/node --expose-gc --max-semi-space-size=2 dist/bench/micro/memory-entry-cost.js
 * (the proxy's semi-space: with V8's larger default, RSS holds young-generation pages too)
 *
 * 1. Fills a MemoryStore with N distinct small entries shaped like a not-found transaction
 *    (a 200-byte body, one header, an ETag, a key like the proxy's) and reads how much heap and
 *    array-buffer memory they hold after gc, per entry, beyond the strings and body bytes that
 *    entryCost counts one by one. That remainder is the per-entry overhead constant.
 * 2. Reads what N bodies that own their memory (Buffer.allocUnsafeSlow, as the tier keeps them)
 *    cost outside V8's heap beyond their bytes: RSS growth minus the heap's and the bytes'
 *    (OWNED_BODY_BYTES).
 * 3. Times purgeStale over N expired entries (the periodic sweep), and measures what
 *    lru-cache's ttlAutopurge (one timer per entry) holds per entry instead.
 */
import { LRUCache } from 'lru-cache';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { ENTRY_OVERHEAD_BYTES, HEAP_HEADROOM, OWNED_BODY_BYTES, entryCost, type CacheEntry } from '../../src/cache/entry.js';

const N = Number(process.env.ENTRIES ?? 200_000);
const BODY_BYTES = 200;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function held(): number {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const keyOf = (i: number): string => `scp:v2:tx:0x${i.toString(16).padStart(64, '0')}`;

function entryOf(i: number): CacheEntry {
  const body = Buffer.allocUnsafeSlow(BODY_BYTES).fill(i & 0xff);
  return {
    status: 404,
    body,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    etag: `"${i.toString(16).padStart(16, '0')}"`,
    cls: 'tip',
    validatedAt: 1_700_000_000_000 + i,
    tipHeight: 100_000,
  };
}

function measureOverhead(): void {
  // Not 0: lru-cache reads a start time of 0 as "no retention".
  let now = 1_000;
  const store = new MemoryStore({ maxBytes: 2 ** 40, maxEntryBytes: 2 ** 30, now: () => now, sweepIntervalMs: 0 });
  const before = held();
  let counted = 0;
  for (let i = 0; i < N; i++) {
    const key = keyOf(i);
    const entry = entryOf(i);
    // The heap part without V8's headroom, and the body's bytes without what owning them costs.
    counted += (entryCost(key, entry) - OWNED_BODY_BYTES - entry.body.length) / HEAP_HEADROOM - ENTRY_OVERHEAD_BYTES + entry.body.length;
    store.put(key, entry, 60_000);
  }
  const after = held();
  const perEntry = (after - before) / N;
  const beyondCounted = perEntry - counted / N;
  console.log(`entries: ${N}, held per entry: ${perEntry.toFixed(0)} B, counted without the constant: ${(counted / N).toFixed(0)} B`);
  console.log(`overhead beyond the counted strings and body: ${beyondCounted.toFixed(0)} B (ENTRY_OVERHEAD_BYTES = ${ENTRY_OVERHEAD_BYTES})`);
  console.log(`entryCost of one entry: ${entryCost(keyOf(1), entryOf(1))} B; store.byteCount / held: ${(store.byteCount / (after - before)).toFixed(2)}`);

  const timed = (what: string): void => {
    const started = process.hrtime.bigint();
    store.sweep();
    const sweepNs = Number(process.hrtime.bigint() - started);
    console.log(`sweep of ${N} ${what}: ${(sweepNs / 1e6).toFixed(1)} ms (${(sweepNs / N).toFixed(0)} ns an entry); left: ${store.entryCount}`);
  };
  timed('live entries');
  timed('live entries (again)');
  now += 120_000; // everything expired
  timed('expired entries');
  const released = held();
  console.log(`held after the sweep: ${((released - before) / 2 ** 20).toFixed(1)} MiB above the start`);
  void store.close();
}

function measureOwnedBodies(): void {
  const bodies: Buffer[] = new Array<Buffer>(N);
  gc?.();
  gc?.();
  const before = process.memoryUsage();
  for (let i = 0; i < N; i++) bodies[i] = Buffer.allocUnsafeSlow(BODY_BYTES);
  gc?.();
  gc?.();
  const after = process.memoryUsage();
  const grew = (field: 'rss' | 'heapTotal' | 'arrayBuffers'): number => (after[field] - before[field]) / N;
  console.log(
    `a body that owns its memory, outside the heap beyond its bytes: ${(grew('rss') - grew('heapTotal') - grew('arrayBuffers')).toFixed(0)} B ` +
      `(OWNED_BODY_BYTES = ${OWNED_BODY_BYTES}; ${bodies.length} bodies)`,
  );
}

function measureAutopurge(): void {
  const sized = (withTimers: boolean): number => {
    const lru = new LRUCache<string, CacheEntry>({ maxSize: 2 ** 40, ttlAutopurge: withTimers, ttlResolution: 0 });
    const before = held();
    for (let i = 0; i < N; i++) lru.set(keyOf(i), entryOf(i), { ttl: 600_000, size: 1 });
    const after = held();
    lru.clear();
    return (after - before) / N;
  };
  const plain = sized(false);
  const timers = sized(true);
  console.log(`ttlAutopurge: ${(timers - plain).toFixed(0)} B more per entry (one timer each) than a periodic sweep`);
}

// First, while nothing freed before can be reused.
measureOwnedBodies();
measureOverhead();
measureAutopurge();
