/**
 * One entry per transaction, shared by /extended/v1/tx/{id} and the members of tx/multiple
 * (same query). The upstream answers a found member as `{"found":true,"result":<the /tx/{id}
 * body>}`, byte for byte (checked against every found member in the recordings), so the entry
 * keeps the /tx/{id} body (`listItem.unwrapped`) and the list wraps it again.
 *
 * Not-found answers are NOT shared. /tx/{id} answers 404 with an error body; tx/multiple
 * answers `{"found":false,"result":{"tx_id":"<id as requested>"}}` with the list's status 200.
 * Neither can be built from the other byte for byte without the proxy making up upstream
 * bytes, so each route keeps its own: a 404 entry (at the transaction's key) serves /tx/{id}
 * only; a not-found member, or a found one in an unexpected form, is kept at a key of its
 * own (key.ts listMemberKey) and serves lists only. Neither displaces the other.
 */
import type { CacheEntry } from './entry.js';

export const FOUND_MEMBER_PREFIX = '{"found":true,"result":';
export const FOUND_MEMBER_SUFFIX = '}';

/** Whether /tx/{id} may answer with this member (otherwise it is kept for lists only). */
export function servesTransaction(entry: CacheEntry): boolean {
  return entry.listItem?.unwrapped === true;
}

/** Whether a tx/multiple member may be built from this entry (a /tx/{id} 404 may not). */
export function servesListMember(entry: CacheEntry): boolean {
  return entry.status === 200 && entry.listItem !== undefined;
}

/** The member's bytes in a tx/multiple answer. */
export function memberText(entry: CacheEntry): string {
  const body = entry.body.toString('utf8');
  return entry.listItem?.unwrapped ? `${FOUND_MEMBER_PREFIX}${body}${FOUND_MEMBER_SUFFIX}` : body;
}
