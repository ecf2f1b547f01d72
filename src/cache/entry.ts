/**
 * A stored response: the upstream's status and body bytes exactly as received, the few
 * upstream headers clients should still see, and the timestamps the policy decides on.
 * Entries carry a schema version; anything that does not decode is a miss (counted).
 */
import type { MovesWith } from '../chain/activity-view.js';

export type FreshnessClass = 'final' | 'tip' | 'mempool';

export interface CacheEntry {
  status: number;
  body: Buffer;
  /** Upstream headers forwarded as they were (content-type, warning, x-api-version). */
  headers: Record<string, string>;
  /** The upstream's ETag (quoted), used for If-None-Match revalidation. */
  upstreamEtag?: string;
  /** The strong ETag clients get: the upstream's, or a hash of the body when it sent none. */
  etag: string;
  cls: FreshnessClass;
  /** When the upstream last produced or confirmed (304) these bytes, ms since epoch. */
  validatedAt: number;
  /** The chain tip the proxy knew at that moment (tip and mempool classes). */
  tipHash?: string;
  tipHeight?: number;
  /** Stacks block height the data belongs to, so a reorg can purge final entries above it. */
  height?: number;
  /**
   * For transactions (cache/tx-member.ts): how the upstream would order it in a tx/multiple
   * answer. `unwrapped`: the body is the /tx/{id} body, which a list wraps as a found member;
   * otherwise the body is the member's bytes as a list sent them (lists only).
   */
  listItem?: { found: boolean; minedHeight?: number; unwrapped?: boolean };
  /**
   * The principal the answer is about (an address route's principal): what a broadcast naming it,
   * or a block that touched it, makes stale (chain/activity-view.ts, policy.ts `evaluate`).
   */
  principal?: string;
  /**
   * What the answer about `principal` moves with when narrower than anything about it
   * (chain/activity-view.ts `MovesWith`): then a burn block alone does not make it stale.
   * Absent (and in entries stored before it existed): anything.
   */
  movesWith?: MovesWith;
  /**
   * A mempool-wide estimate (GET /extended/v2/mempool/fees) that may be served up to
   * `mempoolFeesMaxAgeMs` old whatever the mempool or tip did since (policy.ts `evaluate`).
   * Absent (and in entries stored before it existed): an ordinary entry of its class.
   */
  lagsMempool?: true;
}

const MAGIC = 0x53; // 'S'
// 3: a final entry is admitted only when the block it names is the verified canonical one;
// entries a version 2 proxy stored as final were not, and are not read (a miss, counted).
// 4: entries carry the principal they are about (issue 15); a version 3 entry has none, so a
// broadcast naming its principal would not make it stale: not read (a miss, counted).
const FORMAT_VERSION = 4;
const HEADER_BYTES = 10; // magic, version, uint32 meta length, uint32 body length

type EntryMeta = Omit<CacheEntry, 'body'>;

export function encodeEntry(entry: CacheEntry): Buffer {
  const { body, ...meta } = entry;
  const metaBytes = Buffer.from(JSON.stringify(meta), 'utf8');
  const head = Buffer.allocUnsafe(HEADER_BYTES);
  head.writeUInt8(MAGIC, 0);
  head.writeUInt8(FORMAT_VERSION, 1);
  head.writeUInt32BE(metaBytes.length, 2);
  head.writeUInt32BE(body.length, 6);
  return Buffer.concat([head, metaBytes, body]);
}

/** Returns undefined for anything that is not a well-formed entry of this version. */
export function decodeEntry(bytes: Buffer): CacheEntry | undefined {
  if (bytes.length < HEADER_BYTES || bytes.readUInt8(0) !== MAGIC || bytes.readUInt8(1) !== FORMAT_VERSION) return undefined;
  const metaEnd = HEADER_BYTES + bytes.readUInt32BE(2);
  // Both lengths are stored, so a cut-short value is refused rather than served truncated.
  if (metaEnd + bytes.readUInt32BE(6) !== bytes.length) return undefined;
  try {
    // This runs on every Redis-tier hit: the metadata is read in place (no subarray) and the parsed
    // object becomes the entry (no copy of its fields); the body is a view of the reply, not a copy.
    const meta = JSON.parse(bytes.toString('utf8', HEADER_BYTES, metaEnd)) as EntryMeta & { body?: Buffer };
    if (typeof meta.status !== 'number' || typeof meta.etag !== 'string' || typeof meta.validatedAt !== 'number') return undefined;
    meta.body = bytes.subarray(metaEnd);
    return meta as CacheEntry;
  } catch {
    return undefined;
  }
}

/*
 * What one entry really costs the process in the memory tier, so its byte budget bounds the
 * process and not only the bodies (issue 14: RSS growth under a flood of distinct misses within
 * the tier plus a fixed allowance). Strings are counted as V8 stores a two-byte string (a header,
 * then 2 bytes a char): one-byte strings cost less, so this is an upper bound. The body counts its
 * own bytes: the memory tier stores bodies that own their memory (see `ownedBody`), never a view
 * that pins a larger pooled or socket buffer.
 */
const STRING_HEADER_BYTES = 16;
/** A property of a small object (a headers name/value pair, an optional field): its slot and descriptor. */
const PROPERTY_BYTES = 16;
/**
 * Everything an entry costs beyond its strings and body bytes: the entry object and its fields,
 * the headers object, the Buffer object and its ArrayBuffer, and lru-cache's slot (key map
 * entry, key/value/size/ttl/start/next/prev arrays). Measured by bench/micro/memory-entry-cost.ts
 * (Node 24; 50,000 and 200,000 entries with 200-byte bodies, one header, an ETag and a tx key;
 * heap plus array buffers after gc): 503 and 512 bytes an entry beyond the strings and body bytes
 * counted one by one. Rounded up to leave room for the arrays lru-cache grows by doubling.
 */
export const ENTRY_OVERHEAD_BYTES = 600;
/**
 * What a body that owns its memory costs outside V8's heap beyond its bytes: node allocates each
 * one on its own (malloc's header and rounding, V8's BackingStore and ArrayBuffer extension).
 * Measured by bench/micro/memory-entry-cost.ts (200-byte bodies, after gc, the proxy's 2 MiB
 * semi-space): RSS grew 224 and 229 bytes a body more than the heap and the bodies' own bytes
 * for 200,000 bodies (298 for 50,000, where fixed costs weigh more).
 */
export const OWNED_BODY_BYTES = 224;
/**
 * The heap an entry's objects take is not all V8 holds for them: V8 collects garbage only once its
 * heap has grown by a factor of what was live, keeps pages that sweeping left partly used, and
 * keeps freed pages for reuse. Under the flood of distinct misses (bench/memory-flood.ts, 128 MiB
 * tier, heap sized from the tier) V8's heap held 194 MiB for 132 MiB in use after collection, and
 * RSS grew 1.6 times what the tier counted without this factor (+225 to +236 MiB against 128).
 * Charging the heap part half again makes the tier's count what its entries cost the process:
 * the tier holds fewer entries (a third fewer small ones), and `maxBytes` means what it says.
 */
export const HEAP_HEADROOM = 1.5;

const stringBytes = (text: string): number => STRING_HEADER_BYTES + 2 * text.length;

/** The memory an entry stored under `key` costs the process, for the byte-bounded memory tier. */
export function entryCost(key: string, entry: CacheEntry): number {
  let heapBytes = ENTRY_OVERHEAD_BYTES + stringBytes(key) + stringBytes(entry.etag);
  for (const name in entry.headers) heapBytes += PROPERTY_BYTES + stringBytes(name) + stringBytes(entry.headers[name] ?? '');
  if (entry.upstreamEtag !== undefined) heapBytes += PROPERTY_BYTES + stringBytes(entry.upstreamEtag);
  if (entry.tipHash !== undefined) heapBytes += PROPERTY_BYTES + stringBytes(entry.tipHash);
  if (entry.listItem !== undefined) heapBytes += 4 * PROPERTY_BYTES;
  if (entry.principal !== undefined) heapBytes += PROPERTY_BYTES + stringBytes(entry.principal);
  if (entry.movesWith !== undefined) heapBytes += PROPERTY_BYTES + stringBytes(entry.movesWith);
  if (entry.lagsMempool !== undefined) heapBytes += PROPERTY_BYTES;
  return Math.ceil(HEAP_HEADROOM * heapBytes) + OWNED_BODY_BYTES + entry.body.length;
}

/**
 * The entry with a body that owns exactly its bytes. A Buffer can be a view of a larger parent
 * (a slice of Node's 8 KiB allocation pool, of a Redis reply's socket chunk, of the encoded
 * entry decodeEntry read): kept as is, it would pin the whole parent. Copied into memory of its
 * own (not the pool: that would pin a pool slab again); bodies that own theirs stay as they are.
 */
export function withOwnedBody(entry: CacheEntry): CacheEntry {
  const body = entry.body;
  if (body.byteOffset === 0 && body.buffer.byteLength === body.length) return entry;
  const owned = Buffer.allocUnsafeSlow(body.length);
  body.copy(owned);
  return { ...entry, body: owned };
}
