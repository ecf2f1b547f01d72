/**
 * Micro-benchmark behind the memory tier's choice of lru-cache (docs/architecture.md "Design notes"): the
 * hand-written Map LRU the memory tier used to be, against lru-cache configured as
 * src/cache/memory-store.ts configures it, on a hit and on a put that evicts. Medians of
 * alternating rounds, in the same process.
 *   npm run build && node_modules/.bin/node dist/bench/micro/memory-tier-lru.js
 */
import { LRUCache } from 'lru-cache';

const OVERHEAD = 400;
const ROUNDS = 7;

interface Entry {
  body: Buffer;
}

/** The memory tier before lru-cache: a Map in recency order, bytes counted by hand. */
class MapLru {
  private readonly slots = new Map<string, { entry: Entry; size: number; expiresAt: number }>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  peek(key: string, now: number): Entry | undefined {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    if (slot.expiresAt <= now) {
      this.slots.delete(key);
      this.bytes -= slot.size;
      return undefined;
    }
    this.slots.delete(key);
    this.slots.set(key, slot);
    return slot.entry;
  }

  put(key: string, entry: Entry, retainMs: number, now: number): void {
    const size = entry.body.length + OVERHEAD;
    const existing = this.slots.get(key);
    if (existing) {
      this.slots.delete(key);
      this.bytes -= existing.size;
    }
    this.slots.set(key, { entry, size, expiresAt: now + retainMs });
    this.bytes += size;
    for (const [k, slot] of this.slots) {
      if (this.bytes <= this.maxBytes) break;
      this.slots.delete(k);
      this.bytes -= slot.size;
    }
  }
}

interface Tier {
  get(key: string): Entry | undefined;
  set(key: string, entry: Entry, retainMs: number): void;
}

function mapTier(maxBytes: number): Tier {
  const lru = new MapLru(maxBytes);
  return { get: (key) => lru.peek(key, Date.now()), set: (key, entry, retainMs) => lru.put(key, entry, retainMs, Date.now()) };
}

function lruCacheTier(maxBytes: number): Tier {
  const lru = new LRUCache<string, Entry>({
    maxSize: maxBytes,
    sizeCalculation: (entry) => entry.body.length + OVERHEAD,
    perf: { now: Date.now },
    ttlResolution: 0,
  });
  return { get: (key) => lru.get(key), set: (key, entry, retainMs) => void lru.set(key, entry, { ttl: retainMs }) };
}

const body = Buffer.alloc(2400, 'x');
const keys = Array.from({ length: 200_000 }, (_, i) => `sp:v2:tx:0x${i.toString(16).padStart(64, '0')}`);

function nanosPerOp(n: number, op: (i: number) => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) op(i);
  return Number(process.hrtime.bigint() - started) / n;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const kinds = { 'Map LRU': mapTier, 'lru-cache': lruCacheTier };
const results: Record<string, { hit: number[]; evictingPut: number[] }> = {};
let found = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of Object.entries(kinds)) {
    const result = (results[name] ??= { hit: [], evictingPut: [] });
    const warm = make(64 * 1024 * 1024);
    for (let i = 0; i < 1_000; i++) warm.set(keys[i] as string, { body }, 60_000);
    result.hit.push(nanosPerOp(2_000_000, (i) => (found += warm.get(keys[i % 1_000] as string) ? 1 : 0)));
    const small = make(4 * 1024 * 1024);
    result.evictingPut.push(nanosPerOp(400_000, (i) => small.set(keys[i % keys.length] as string, { body }, 60_000)));
  }
}
for (const [name, result] of Object.entries(results)) {
  console.log(`${name.padEnd(10)} hit ${median(result.hit).toFixed(0)} ns/op   put that evicts ${median(result.evictingPut).toFixed(0)} ns/op`);
}
if (found === 0) throw new Error('no hits: the benchmark measured nothing');
