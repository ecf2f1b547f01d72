/** A cache entry for store and codec tests: a 200 JSON answer of class `tip`, fields overridable. */
import type { CacheEntry } from '../../src/cache/entry.js';

export function entry(body: Buffer | string, extra: Partial<CacheEntry> = {}): CacheEntry {
  return {
    status: 200,
    body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    etag: '"e"',
    cls: 'tip',
    validatedAt: 1_000,
    ...extra,
  };
}
