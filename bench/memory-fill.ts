/**
 * One million distinct cached URLs in the memory tier, in-process (scenario 5): the HTTP flood
 * cannot send a million misses within the bench's time budget, so this child fills a MemoryStore
 * directly with a million entries shaped as the proxy stores them (a key like the proxy's, a
 * 404 body of a transaction never seen, its headers, ETag and chain stamp), under the bound
 * MAX_BYTES, and reports RSS and the tier's own byte count against that bound, after gc.
 *   node --expose-gc dist/bench/memory-fill.js   (MAX_BYTES, ENTRIES; prints one JSON line)
 */
import { MemoryStore } from '../src/cache/memory-store.js';
import type { CacheEntry } from '../src/cache/entry.js';

const ENTRIES = Number(process.env.ENTRIES ?? 1_000_000);
const MAX_BYTES = Number(process.env.MAX_BYTES ?? 2 ** 30);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const settledRss = (): number => {
  gc?.();
  gc?.();
  return process.memoryUsage().rss;
};

const keyOf = (i: number): string => `scp:v2:tx_by_id:/extended/v1/tx/0x${i.toString(16).padStart(64, '0')}`;

function entryOf(i: number): CacheEntry {
  const id = `0x${i.toString(16).padStart(64, '0')}`;
  // The upstream's not-found answer for a transaction, as bytes it sent (one per id).
  const body = Buffer.from(`{"error":"could not find transaction by ID","message":"could not find transaction by ID ${id}"}`, 'utf8');
  return {
    status: 404,
    body,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-api-version': 'v8.13.6' },
    etag: `"${i.toString(16).padStart(40, '0')}"`,
    cls: 'mempool',
    validatedAt: Date.now(),
    tipHash: '0x7b1c7bcb3a4e3e5c8b2c2f0b7c2d1c2a3b4c5d6e7f8091a2b3c4d5e6f708192a',
    tipHeight: 123_456,
  };
}

const before = settledRss();
const started = process.hrtime.bigint();
const store = new MemoryStore({ maxBytes: MAX_BYTES, maxEntryBytes: 1024 * 1024, sweepIntervalMs: 0 });
for (let i = 0; i < ENTRIES; i++) store.put(keyOf(i), entryOf(i), 3_600_000);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const after = settledRss();
const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
const usage = process.memoryUsage();
console.log(
  JSON.stringify({
    entries: ENTRIES,
    maxBytesMiB: mib(MAX_BYTES),
    heldEntries: store.entryCount,
    tierMiB: mib(store.byteCount),
    rssBeforeMiB: mib(before),
    rssAfterMiB: mib(after),
    heapUsedMiB: mib(usage.heapUsed),
    heapTotalMiB: mib(usage.heapTotal),
    arrayBuffersMiB: mib(usage.arrayBuffers),
    rssGrowthPerBound: Math.round(((after - before) / MAX_BYTES) * 100) / 100,
    rssGrowthPerTierBytes: Math.round(((after - before) / store.byteCount) * 100) / 100,
    seconds: Math.round(seconds * 10) / 10,
  }),
);
void store.close();
