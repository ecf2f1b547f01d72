/**
 * What only the memory tier does (LRU by bytes, exact retention on an injected clock, the hit
 * path without copies), the stored-entry codec, the raw JSON member scanner and the tx/multiple
 * list composer (byte-exact answers), and If-None-Match matching. What every store must do
 * (get, set, delete, retention, exact bytes and fields) is the contract suite in test/contract/.
 */
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { describe, expect, it, vi } from 'vitest';
import { ENTRY_OVERHEAD_BYTES, HEAP_HEADROOM, OWNED_BODY_BYTES, decodeEntry, encodeEntry, entryCost, type CacheEntry } from '../../src/cache/entry.js';
import { scanObjectMembers } from '../../src/cache/json-object-scan.js';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { composeList, orderItems } from '../../src/cache/tx-list.js';
import { matchesIfNoneMatch } from '../../src/http/respond.js';
import { recordingsMatching } from '../../testkit/index.js';
import { entry } from '../support/entries.js';

/** A body whose entry costs exactly `size` bytes in the memory tier under `key`. */
function sized(key: string, size: number, tag = 'x'): CacheEntry {
  const overhead = entryCost(key, entry(''));
  // Buffer.alloc: a body that owns its memory, as the memory tier keeps bodies.
  return entry(Buffer.alloc(size - overhead, tag));
}

describe('MemoryStore', () => {
  // Above what an entry with an empty body costs (its heap part with V8's headroom).
  const UNIT = 2_000;

  function store(maxBytes: number, extra: { maxEntryBytes?: number; now?: () => number; onEviction?: () => void } = {}) {
    return new MemoryStore({
      maxBytes,
      maxEntryBytes: extra.maxEntryBytes ?? maxBytes,
      now: extra.now,
      telemetry: extra.onEviction ? (Object.assign(Object.create(noopTelemetry), { cacheEvicted: extra.onEviction }) as Telemetry) : undefined,
    });
  }

  it('counts entries and bytes', async () => {
    const s = store(10 * UNIT);
    await s.set('a', sized('a', UNIT), null);
    await s.set('b', sized('b', 2 * UNIT), null);
    expect(s.entryCount).toBe(2);
    expect(s.byteCount).toBe(3 * UNIT);
    await s.set('a', sized('a', 3 * UNIT), null);
    expect(s.entryCount).toBe(2);
    expect(s.byteCount).toBe(5 * UNIT);
    await s.delete('b');
    expect(s.byteCount).toBe(3 * UNIT);
    expect(await s.get('b')).toBeUndefined();
  });

  it('evicts the least recently used entries first when over its byte budget', async () => {
    const evictions = vi.fn();
    const s = store(3 * UNIT, { onEviction: evictions });
    await s.set('a', sized('a', UNIT, 'a'), null);
    await s.set('b', sized('b', UNIT, 'b'), null);
    await s.set('c', sized('c', UNIT, 'c'), null);
    await s.set('d', sized('d', UNIT, 'd'), null);
    expect(await s.get('a')).toBeUndefined();
    expect((await s.get('b'))?.body.toString()[0]).toBe('b');
    expect(s.byteCount).toBe(3 * UNIT);
    expect(evictions).toHaveBeenCalledTimes(1);
    expect(evictions).toHaveBeenCalledWith('memory');
  });

  it('refreshes recency on get, so the entry read last survives', async () => {
    const s = store(3 * UNIT);
    await s.set('a', sized('a', UNIT), null);
    await s.set('b', sized('b', UNIT), null);
    await s.set('c', sized('c', UNIT), null);
    expect(await s.get('a')).toBeDefined();
    await s.set('d', sized('d', UNIT), null);
    expect(s.peek('b')).toBeUndefined();
    expect(s.peek('a')).toBeDefined();
    expect(s.peek('c')).toBeDefined();
    expect(s.peek('d')).toBeDefined();
  });

  it('evicts as many old entries as a large new one needs', async () => {
    const s = store(4 * UNIT);
    for (const key of ['a', 'b', 'c', 'd']) await s.set(key, sized(key, UNIT), null);
    await s.set('big', sized('big', 3 * UNIT), null);
    expect(['a', 'b', 'c'].map((k) => s.peek(k))).toEqual([undefined, undefined, undefined]);
    expect(s.peek('d')).toBeDefined();
    expect(s.peek('big')).toBeDefined();
    expect(s.byteCount).toBe(4 * UNIT);
  });

  it('does not keep entries larger than maxEntryBytes, and does not evict others for them', async () => {
    const s = store(10 * UNIT, { maxEntryBytes: 2 * UNIT });
    await s.set('small', sized('small', UNIT), null);
    await s.set('huge', sized('huge', 2 * UNIT + 1), null);
    expect(s.peek('huge')).toBeUndefined();
    expect(s.peek('small')).toBeDefined();
    expect(s.byteCount).toBe(UNIT);
    await s.set('edge', sized('edge', 2 * UNIT), null);
    expect(s.peek('edge')).toBeDefined();
  });

  // The Redis tier's memory tier is small (cache.memory.maxBytesWithRedis) while maxEntryBytes is
  // not: lru-cache, handed such an entry, evicted every other entry and then the new one, and
  // left its byte count negative (the tier then held more than its bound).
  it('does not keep an entry larger than its whole budget, evicts nothing for it and keeps its byte count', async () => {
    const evicted = vi.fn();
    const s = store(3 * UNIT, { maxEntryBytes: 100 * UNIT, onEviction: evicted });
    await s.set('a', sized('a', UNIT), null);
    await s.set('b', sized('b', UNIT), null);
    await s.set('huge', sized('huge', 3 * UNIT + 1), null);
    expect(s.peek('huge')).toBeUndefined();
    expect(s.peek('a')).toBeDefined();
    expect(s.peek('b')).toBeDefined();
    expect(evicted).not.toHaveBeenCalled();
    expect(s.byteCount).toBe(2 * UNIT);
    await s.set('whole', sized('whole', 3 * UNIT), null);
    expect(s.peek('whole')).toBeDefined();
    expect(s.entryCount).toBe(1);
    expect(s.byteCount).toBe(3 * UNIT);
  });

  it('drops the old value when a key is overwritten with a too-large one', async () => {
    const s = store(10 * UNIT, { maxEntryBytes: 2 * UNIT });
    await s.set('k', sized('k', UNIT), null);
    await s.set('k', sized('k', 5 * UNIT), null);
    expect(s.peek('k')).toBeUndefined();
    expect(s.byteCount).toBe(0);
  });

  // Retention as every store keeps it is in test/contract/store.contract.test.ts; here, the
  // exact instant on the injected clock and the bytes an expired entry gives back.
  it('keeps an entry for its whole retention on the injected clock, drops it the next millisecond (as Redis PX does), and frees its bytes', async () => {
    let now = 50_000;
    const s = store(10 * UNIT, { now: () => now });
    await s.set('short', sized('short', UNIT), 1_000);
    await s.set('forever', sized('forever', UNIT), null);
    now += 1_000;
    expect(await s.get('short')).toBeDefined();
    now += 1;
    expect(await s.get('short')).toBeUndefined();
    expect(s.entryCount).toBe(1);
    expect(s.byteCount).toBe(UNIT);
  });

  it('returns the stored entry object itself (no copy on the hit path)', async () => {
    const s = store(10 * UNIT);
    const e = sized('k', UNIT);
    await s.set('k', e, null);
    expect(s.peek('k')).toBe(e);
    expect(s.peek('k')).toBe(e);
  });

  it('stores a body that is a view of a larger buffer as a copy of exactly its bytes, so it pins nothing', async () => {
    const s = store(100 * UNIT);
    const parent = Buffer.alloc(64 * 1024, 'p');
    parent.write('{"found":false}', 1_000);
    const view = entry(parent.subarray(1_000, 1_015));
    await s.set('view', view, null);
    const stored = s.peek('view');
    expect(stored?.body.toString()).toBe('{"found":false}');
    expect(stored?.body.buffer.byteLength).toBe(15);
    expect(stored?.body.buffer).not.toBe(parent.buffer);
    // A small Buffer.from() lives in Node's shared 8 KiB pool: copied out of it too.
    const pooled = entry(Buffer.from('{"a":1}'));
    expect(pooled.body.buffer.byteLength).toBeGreaterThan(7);
    await s.set('pooled', pooled, null);
    expect(s.peek('pooled')?.body.buffer.byteLength).toBe(7);
    // What a Redis read gives the tier: decodeEntry's body is a view of the whole encoded value.
    const decoded = decodeEntry(encodeEntry(entry('{"tx_id":"0x01"}')));
    expect(decoded?.body.buffer.byteLength).toBeGreaterThan(16);
    await s.set('decoded', decoded as CacheEntry, null);
    expect(s.peek('decoded')?.body.buffer.byteLength).toBe(16);
    expect(s.peek('decoded')?.body.toString()).toBe('{"tx_id":"0x01"}');
  });

  it('drops expired entries on its periodic sweep, without anyone reading them, and frees their bytes', async () => {
    vi.useFakeTimers();
    try {
      let now = 50_000;
      const s = new MemoryStore({ maxBytes: 10 * UNIT, maxEntryBytes: 10 * UNIT, now: () => now, sweepIntervalMs: 1_000 });
      await s.set('short', sized('short', UNIT), 500);
      await s.set('forever', sized('forever', UNIT), null);
      now += 501;
      expect(s.entryCount).toBe(2); // expired, but nothing read it yet
      vi.advanceTimersByTime(1_000);
      expect(s.entryCount).toBe(1);
      expect(s.byteCount).toBe(UNIT);
      expect(s.peek('forever')).toBeDefined();
      await s.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('empties on close', async () => {
    const s = store(10 * UNIT);
    await s.set('k', sized('k', UNIT), null);
    await s.close();
    expect(s.entryCount).toBe(0);
    expect(s.byteCount).toBe(0);
    expect(await s.get('k')).toBeUndefined();
  });
});

describe('entryCost: what an entry costs the process in the memory tier', () => {
  const KEY = 'scp:v2:tx:0xab';
  const BASE = entry(Buffer.alloc(200), { etag: '"e"' });
  // What the entry's objects take in V8's heap, charged with the headroom V8 keeps: 600 overhead
  //   + key (16 + 2 x 14) + etag (16 + 2 x 3) + content-type header (16 + name 16 + 2 x 12 + value 16 + 2 x 31)
  const HEAP = 800;
  const heapCharge = (bytes: number): number => Math.ceil(HEAP_HEADROOM * bytes);

  it("counts the heap part (overhead, key, etag, headers) with V8's headroom, then the body and what owning it costs", () => {
    expect(entryCost(KEY, BASE)).toBe(heapCharge(HEAP) + OWNED_BODY_BYTES + 200);
    expect(entryCost(KEY, BASE)).toBe(1_624);
    expect(ENTRY_OVERHEAD_BYTES).toBe(600);
  });

  it('grows with the key, the headers and the optional metadata', () => {
    const base = OWNED_BODY_BYTES + 200;
    expect(entryCost(`${KEY}?event_limit=50`, BASE)).toBe(heapCharge(HEAP + 2 * '?event_limit=50'.length) + base);
    expect(entryCost(KEY, { ...BASE, headers: { ...BASE.headers, warning: 'x' } })).toBe(heapCharge(HEAP + 16 + (16 + 14) + (16 + 2)) + base);
    expect(entryCost(KEY, { ...BASE, upstreamEtag: '"u"' })).toBe(heapCharge(HEAP + 16 + 16 + 6) + base);
    expect(entryCost(KEY, { ...BASE, tipHash: '0x01' })).toBe(heapCharge(HEAP + 16 + 16 + 8) + base);
    expect(entryCost(KEY, { ...BASE, listItem: { found: true } })).toBe(heapCharge(HEAP + 64) + base);
    expect(entryCost(KEY, { ...BASE, principal: 'SP2J6' })).toBe(heapCharge(HEAP + 16 + 16 + 10) + base);
  });

  it("counts body bytes once each: they live outside V8's heap", () => {
    expect(entryCost(KEY, { ...BASE, body: Buffer.alloc(1_200) }) - entryCost(KEY, BASE)).toBe(1_000);
  });
});

describe('encodeEntry / decodeEntry', () => {
  const FULL: CacheEntry = entry(Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x22, 0x7d, 0x0a]), {
    status: 404,
    headers: { 'content-type': 'application/json; charset=utf-8', warning: '299 - "Deprecated"', 'x-api-version': 'v8.13.6' },
    upstreamEtag: '"0xf5be33ab"',
    etag: '"0xf5be33ab"',
    cls: 'final',
    validatedAt: 1_795_327_171_909,
    tipHash: '0xtip',
    height: 42,
    listItem: { found: true, minedHeight: 7 },
    principal: 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7',
  });

  it('round-trips every field and the body bytes exactly', () => {
    const decoded = decodeEntry(encodeEntry(FULL));
    expect(decoded).toEqual(FULL);
    expect(decoded && Buffer.compare(decoded.body, FULL.body)).toBe(0);
  });

  it('round-trips a minimal entry and an empty body', () => {
    const minimal = entry('', { cls: 'mempool' });
    expect(decodeEntry(encodeEntry(minimal))).toEqual(minimal);
  });

  it('round-trips a real recorded body', () => {
    const [rec] = recordingsMatching(/^\/extended\/v1\/tx\/0x[0-9a-f]{64}$/);
    expect(rec).toBeDefined();
    const e = entry(rec?.body ?? '');
    expect(decodeEntry(encodeEntry(e))?.body.toString('utf8')).toBe(rec?.body);
  });

  it('rejects every truncation inside the header and the metadata', () => {
    const bytes = encodeEntry(FULL);
    const metaEnd = 6 + bytes.readUInt32BE(2);
    for (let length = 0; length < metaEnd; length++) {
      expect(decodeEntry(bytes.subarray(0, length)), `first ${length} bytes`).toBeUndefined();
    }
  });

  it('rejects another magic byte or format version', () => {
    const bytes = encodeEntry(FULL);
    const wrongMagic = Buffer.from(bytes);
    wrongMagic[0] = 0x54;
    const wrongVersion = Buffer.from(bytes);
    wrongVersion[1] = 5;
    // Version 3 entries carry no principal: a broadcast could not make them stale (issue 15).
    const versionThree = Buffer.from(bytes);
    versionThree[1] = 3;
    // Version 2 entries were admitted as final without evidence of their block (issue 14).
    const versionTwo = Buffer.from(bytes);
    versionTwo[1] = 2;
    const versionZero = Buffer.from(bytes);
    versionZero[1] = 0;
    expect(decodeEntry(wrongMagic)).toBeUndefined();
    expect(decodeEntry(wrongVersion)).toBeUndefined();
    expect(decodeEntry(versionZero)).toBeUndefined();
    expect(decodeEntry(versionTwo)).toBeUndefined();
    expect(decodeEntry(versionThree)).toBeUndefined();
  });

  function framed(meta: string, body = ''): Buffer {
    const metaBytes = Buffer.from(meta, 'utf8');
    const bodyBytes = Buffer.from(body);
    const head = Buffer.alloc(10);
    head.writeUInt8(0x53, 0);
    head.writeUInt8(4, 1);
    head.writeUInt32BE(metaBytes.length, 2);
    head.writeUInt32BE(bodyBytes.length, 6);
    return Buffer.concat([head, metaBytes, bodyBytes]);
  }

  it.each([
    ['an empty buffer', Buffer.alloc(0)],
    ['plain JSON', Buffer.from('{"status":200,"etag":"x","validatedAt":1}')],
    ['random bytes', Buffer.from('53 01 ff ff ff ff 00 01 02'.split(' ').map((h) => parseInt(h, 16)))],
    ['a meta length past the end', framed('{}').subarray(0, 7)],
    ['metadata that is not JSON', framed('{"status":200,', 'body')],
    ['metadata that is null', framed('null')],
    ['metadata that is an array', framed('[]')],
    ['metadata without status', framed('{"etag":"x","validatedAt":1,"cls":"tip","headers":{}}')],
    ['metadata with a string status', framed('{"status":"200","etag":"x","validatedAt":1,"cls":"tip","headers":{}}')],
    ['metadata without etag', framed('{"status":200,"validatedAt":1,"cls":"tip","headers":{}}')],
    ['metadata without validatedAt', framed('{"status":200,"etag":"x","cls":"tip","headers":{}}')],
  ])('decodes %s to undefined', (_name, bytes) => {
    expect(decodeEntry(bytes)).toBeUndefined();
  });

  it('accepts a hand-framed well-formed entry (the test framing matches the format)', () => {
    const decoded = decodeEntry(framed('{"status":200,"etag":"x","validatedAt":1,"cls":"tip","headers":{}}', '{}'));
    expect(decoded?.status).toBe(200);
    expect(decoded?.body.toString()).toBe('{}');
  });
});

describe('scanObjectMembers', () => {
  it('returns each member value as its exact raw text', () => {
    const text = '{"a":1,"b":{"c":[1,2,{"d":"}"}]},"e":"x,y\\"}z","f":[],"g":{},"h":null,"i":true,"j":-1.5e3}';
    expect(scanObjectMembers(text)).toEqual([
      { key: 'a', raw: '1' },
      { key: 'b', raw: '{"c":[1,2,{"d":"}"}]}' },
      { key: 'e', raw: '"x,y\\"}z"' },
      { key: 'f', raw: '[]' },
      { key: 'g', raw: '{}' },
      { key: 'h', raw: 'null' },
      { key: 'i', raw: 'true' },
      { key: 'j', raw: '-1.5e3' },
    ]);
  });

  it('handles strings with brackets, commas, escaped quotes and backslashes', () => {
    const text = '{"s":"{[,]}","t":"\\\\","u":"a\\\\\\"b","v":{"w":"]}\\"{"}}';
    const members = scanObjectMembers(text);
    expect(members?.map((m) => m.raw)).toEqual(['"{[,]}"', '"\\\\"', '"a\\\\\\"b"', '{"w":"]}\\"{"}']);
    for (const m of members ?? []) expect(() => JSON.parse(m.raw) as unknown).not.toThrow();
  });

  it('decodes keys, including escaped ones', () => {
    expect(scanObjectMembers('{"k\\"ey":1,"\\u0041":2,"0xAB":3}')?.map((m) => m.key)).toEqual(['k"ey', 'A', '0xAB']);
  });

  it('tolerates whitespace everywhere JSON allows it and keeps it inside values', () => {
    const text = ' \n{ "a" : 1 ,\t"b" :\r\n[ 1 , 2 ] , "c": { "d" : "e" } }\n ';
    expect(scanObjectMembers(text)).toEqual([
      { key: 'a', raw: '1' },
      { key: 'b', raw: '[ 1 , 2 ]' },
      { key: 'c', raw: '{ "d" : "e" }' },
    ]);
  });

  it('returns no members for empty objects', () => {
    expect(scanObjectMembers('{}')).toEqual([]);
    expect(scanObjectMembers(' { } ')).toEqual([]);
  });

  it.each(['[]', '[{"a":1}]', '"{}"', '1', 'null', 'true', '', '   '])('returns undefined for the non-object %j', (text) => {
    expect(scanObjectMembers(text)).toBeUndefined();
  });

  it.each(['{', '{"a"', '{"a":', '{"a":1', '{"a":1,', '{"a":"x', '{"a":"x\\', '{"a":{"b":1}', '{"a":[1,2', '{"a":1,"b":{"c":"}"'])(
    'returns undefined for the truncated %j',
    (text) => {
      expect(scanObjectMembers(text)).toBeUndefined();
    },
  );

  it.each(['{"a":1}x', '{"a":1}}', '{"a":1,}', '{"a" 1}', '{a:1}', '{"a":}', '{,"a":1}', '{"a":1 "b":2}'])('returns undefined for the malformed %j', (text) => {
    expect(scanObjectMembers(text)).toBeUndefined();
  });

  it('splits every recorded tx/multiple answer into members that rebuild it byte for byte', () => {
    const recs = recordingsMatching(/^\/extended\/v1\/tx\/multiple\?/);
    expect(recs.length).toBe(8);
    for (const rec of recs) {
      const members = scanObjectMembers(rec.body);
      expect(members, rec.path).toBeDefined();
      const parsed = JSON.parse(rec.body) as Record<string, unknown>;
      expect(members?.map((m) => m.key)).toEqual(Object.keys(parsed));
      for (const m of members ?? []) expect(JSON.parse(m.raw)).toEqual(parsed[m.key]);
      expect(`{${(members ?? []).map((m) => `${JSON.stringify(m.key)}:${m.raw}`).join(',')}}`).toBe(rec.body);
    }
  });
});

describe('orderItems / composeList', () => {
  const mined = (id: string, height: number) => ({
    id,
    entry: entry(`{"found":true,"result":{"tx_id":"${id}","block_height":${height}}}`, { listItem: { found: true, minedHeight: height } }),
  });
  const pending = (id: string) => ({ id, entry: entry(`{"found":true,"result":{"tx_id":"${id}","tx_status":"pending"}}`, { listItem: { found: true } }) });
  const missing = (id: string) => ({ id, entry: entry(`{"found":false,"result":{"tx_id":"${id}"}}`, { listItem: { found: false } }) });

  it('orders mined by height (stable), then mempool, then not found, each in request order', () => {
    const items = [missing('n1'), pending('p1'), mined('m5a', 5), mined('m3', 3), missing('n2'), mined('m5b', 5), pending('p2'), mined('m1', 1)];
    expect(orderItems(items).map((i) => i.id)).toEqual(['m1', 'm3', 'm5a', 'm5b', 'p1', 'p2', 'n1', 'n2']);
  });

  it('treats an entry without list metadata as not found', () => {
    const bare = { id: 'x', entry: entry('{}') };
    expect(orderItems([bare, mined('m', 9)]).map((i) => i.id)).toEqual(['m', 'x']);
  });

  it('does not reorder its input array', () => {
    const items = [pending('p'), mined('m', 1)];
    orderItems(items);
    expect(items.map((i) => i.id)).toEqual(['p', 'm']);
  });

  it('writes the members as an object keyed by id, with the stored bytes unchanged', () => {
    const body = composeList([
      pending('0xp'),
      { id: '0xm', entry: entry('{ "found" : true , "result":{"block_height":2}}', { listItem: { found: true, minedHeight: 2 } }) },
    ]);
    expect(body.toString('utf8')).toBe(
      '{"0xm":{ "found" : true , "result":{"block_height":2}},"0xp":{"found":true,"result":{"tx_id":"0xp","tx_status":"pending"}}}',
    );
    expect(composeList([]).toString('utf8')).toBe('{}');
  });

  it('rebuilds every recorded tx/multiple answer byte for byte from its members in any request order', () => {
    const recs = recordingsMatching(/^\/extended\/v1\/tx\/multiple\?/);
    for (const rec of recs) {
      const items = (scanObjectMembers(rec.body) ?? []).map(({ key, raw }) => {
        const member = JSON.parse(raw) as { found: boolean; result: { block_height?: number; tx_status?: string } };
        const minedHeight = member.found && member.result.tx_status !== 'pending' ? member.result.block_height : undefined;
        return { id: key, entry: entry(raw, { listItem: { found: member.found, minedHeight } }) };
      });
      expect(composeList(items).toString('utf8'), rec.path).toBe(rec.body);
      // Reversed request order: groups and heights decide, so only equal-height mined ids may move.
      const reversed = composeList([...items].reverse()).toString('utf8');
      expect(JSON.parse(reversed)).toEqual(JSON.parse(rec.body));
    }
  });

  it('puts a later-mined tx after an earlier one even when it was requested first (recorded order)', () => {
    const later = mined('0xf767', 8);
    const earlier = mined('0xcba5', 1);
    expect(orderItems([later, earlier]).map((i) => i.id)).toEqual(['0xcba5', '0xf767']);
  });
});

describe('matchesIfNoneMatch', () => {
  it.each([
    ['"a"', '"a"', true],
    ['W/"a"', '"a"', true],
    ['a', '"a"', true],
    ['"b", "a"', '"a"', true],
    ['"b",W/"a"', '"a"', true],
    ['  "a"  ', '"a"', true],
    ['"b"', '"a"', false],
    ['"b", "c"', '"a"', false],
    ['"ab"', '"a"', false],
    ['*', '"a"', false],
    ['"*"', '"a"', false],
    ['', '"a"', false],
    [undefined, '"a"', false],
    ['"a"', '', false],
  ])('If-None-Match %j against %j: %s', (header, etag, expected) => {
    expect(matchesIfNoneMatch(header, etag)).toBe(expected);
  });
});
