/**
 * A stored response: the upstream's status and body bytes exactly as received, the few
 * upstream headers clients should still see, and the timestamps the policy decides on.
 * Entries carry a schema version; anything that does not decode is a miss (counted).
 */
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
}

const MAGIC = 0x53; // 'S'
const FORMAT_VERSION = 2;
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
  const metaLength = bytes.readUInt32BE(2);
  // Both lengths are stored, so a cut-short value is refused rather than served truncated.
  if (HEADER_BYTES + metaLength + bytes.readUInt32BE(6) !== bytes.length) return undefined;
  try {
    const meta = JSON.parse(bytes.subarray(HEADER_BYTES, HEADER_BYTES + metaLength).toString('utf8')) as EntryMeta;
    if (typeof meta.status !== 'number' || typeof meta.etag !== 'string' || typeof meta.validatedAt !== 'number') return undefined;
    return { ...meta, body: bytes.subarray(HEADER_BYTES + metaLength) };
  } catch {
    return undefined;
  }
}

/** Approximate memory cost, for the byte-bounded memory tier. */
export function entrySize(entry: CacheEntry): number {
  const ENTRY_OVERHEAD = 400;
  return entry.body.length + ENTRY_OVERHEAD;
}
