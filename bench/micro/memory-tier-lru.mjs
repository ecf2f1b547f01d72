// Compares the hand-written Map LRU with lru-cache on the operations the memory tier does.
import { LRUCache } from 'lru-cache';

const OVERHEAD = 400;
class MapLru {
  constructor(maxBytes) { this.max = maxBytes; this.slots = new Map(); this.bytes = 0; }
  peek(key, now) {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    if (slot.expiresAt <= now) { this.slots.delete(key); this.bytes -= slot.size; return undefined; }
    this.slots.delete(key); this.slots.set(key, slot);
    return slot.entry;
  }
  put(key, entry, retainMs, now) {
    const size = entry.body.length + OVERHEAD;
    const existing = this.slots.get(key);
    if (existing) { this.slots.delete(key); this.bytes -= existing.size; }
    this.slots.set(key, { entry, size, expiresAt: retainMs === null ? Infinity : now + retainMs });
    this.bytes += size;
    for (const [k, s] of this.slots) { if (this.bytes <= this.max) break; this.slots.delete(k); this.bytes -= s.size; }
  }
}
function makeLru(maxBytes) {
  return new LRUCache({ maxSize: maxBytes, sizeCalculation: (e) => e.body.length + OVERHEAD, ttlAutopurge: false, allowStale: false, updateAgeOnGet: false });
}
const body = Buffer.alloc(2400, 'x');
const keys = Array.from({ length: 200000 }, (_, i) => `sp:v1:tx_by_id:/extended/v1/tx/0x${i.toString(16).padStart(64, '0')}`);
function run(name, fn, n) {
  const t = process.hrtime.bigint(); fn(n); const ns = Number(process.hrtime.bigint() - t) / n; return ns;
}
const results = { map: { hit: [], churn: [] }, lru: { hit: [], churn: [] } };
for (let round = 0; round < 7; round++) {
  for (const kind of ['map', 'lru']) {
    const maxBytes = 64 * 1024 * 1024;
    const store = kind === 'map' ? new MapLru(maxBytes) : makeLru(maxBytes);
    const put = kind === 'map' ? (k, e, r) => store.put(k, e, r, Date.now()) : (k, e, r) => store.set(k, e, r === null ? {} : { ttl: r });
    const get = kind === 'map' ? (k) => store.peek(k, Date.now()) : (k) => store.get(k);
    for (let i = 0; i < 1000; i++) put(keys[i], { body }, 60000);
    let sink = 0;
    results[kind].hit.push(run('hit', (n) => { for (let i = 0; i < n; i++) sink += get(keys[i % 1000]) ? 1 : 0; }, 2_000_000));
    // churn: distinct keys, small budget: every put evicts
    const small = kind === 'map' ? new MapLru(4 * 1024 * 1024) : makeLru(4 * 1024 * 1024);
    const put2 = kind === 'map' ? (k, e, r) => small.put(k, e, r, Date.now()) : (k, e, r) => small.set(k, e, { ttl: r });
    results[kind].churn.push(run('churn', (n) => { for (let i = 0; i < n; i++) put2(keys[i % keys.length], { body }, 60000); }, 400_000));
  }
}
const med = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const kind of ['map', 'lru']) console.log(kind, 'hit ns/op', med(results[kind].hit).toFixed(1), 'put+evict ns/op', med(results[kind].churn).toFixed(1));
