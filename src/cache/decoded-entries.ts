/**
 * The last entry decoded from each Redis key, reused while Redis returns the very same bytes
 * (compared in full, a memcmp): a key read again and again from the shared tier, because the
 * memory tier is cold, full or too small for it, is parsed once instead of on every hit, and
 * every hit answers with the same entry object (and so its prebuilt headers). Still one GET per
 * hit: Redis stays the truth, and changed bytes are decoded afresh. Bounded in entries and in
 * the size of what it keeps, so it never becomes a second memory tier.
 */
import type { CacheEntry } from './entry.js';

const MAX_KEYS = 512;
/** Larger values are decoded every time (at 16 KiB a value, at most 8 MiB kept). */
const MAX_VALUE_BYTES = 16 * 1024;

export class DecodedEntries {
  private readonly byKey = new Map<string, { bytes: Buffer; entry: CacheEntry }>();

  /** The entry for `bytes` read from `key`: the one decoded before when the bytes are the same. */
  decode(key: string, bytes: Buffer, decode: (bytes: Buffer) => CacheEntry | undefined): CacheEntry | undefined {
    const known = this.byKey.get(key);
    if (known !== undefined && known.bytes.equals(bytes)) return known.entry;
    if (bytes.length > MAX_VALUE_BYTES) {
      if (known !== undefined) this.byKey.delete(key);
      return decode(bytes);
    }
    // A reply may be a view of a larger socket chunk: what is kept owns its memory, so it pins
    // nothing else; the entry's body is a view of that copy, so the value's bytes are kept once.
    const owned = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? bytes : Buffer.from(Uint8Array.prototype.slice.call(bytes).buffer);
    const entry = decode(owned);
    if (entry === undefined) {
      if (known !== undefined) this.byKey.delete(key);
      return undefined;
    }
    if (known === undefined && this.byKey.size >= MAX_KEYS) this.byKey.delete(this.byKey.keys().next().value as string);
    this.byKey.set(key, { bytes: owned, entry });
    return entry;
  }

  get size(): number {
    return this.byKey.size;
  }
}
