/**
 * The newest ETag the upstream gave for each ETag scope (etag-scope.ts), with the chain and time
 * the request that learnt it left at. An expired entry whose stored ETag is the one the upstream
 * confirmed for its scope after the entry was validated is confirmed by that answer: a
 * revalidation of its own would have been answered 304 then. Bounded; in-process only (a
 * miss here just means the entry is revalidated upstream as before).
 */
import { LRUCache } from 'lru-cache';
import type { Snapshot } from './admit.js';

const MAX_SCOPES = 50_000;

export class ResourceValidations {
  private readonly latest = new LRUCache<string, { etag: string; asked: Snapshot }>({ max: MAX_SCOPES });

  /** The upstream answered `etag` (200, 404 or 304) for a URL of `scope`, asked at `asked`. */
  record(scope: string, etag: string, asked: Snapshot): void {
    const known = this.latest.get(scope);
    // Answers can land out of order: a slower, older answer never replaces a newer one; two
    // different ETags asked in the same millisecond leave nothing known.
    if (known && known.asked.at > asked.at) return;
    if (known && known.asked.at === asked.at && known.etag !== etag) this.latest.delete(scope);
    else this.latest.set(scope, { etag, asked });
  }

  /** When the upstream last gave `etag` for `scope`, if that is still its newest answer. */
  confirmedAt(scope: string, etag: string): Snapshot | undefined {
    const known = this.latest.get(scope);
    return known?.etag === etag ? known.asked : undefined;
  }
}
