/**
 * Whether an upstream answer is about what was asked: the identity its body carries (a
 * transaction's tx_id, a block's height or hashes, a burn block's height, the ids of a
 * tx/multiple answer) against the identity the request names (RequestFacts.identity, from the
 * route's resolve()). A valid JSON answer about another resource would otherwise be stored,
 * possibly as final, and served for good. Pure.
 *
 * Routes whose bodies carry nothing checkable have no identity and are not checked: address
 * balances and histories (a principal appears in some rows, not as the body's subject), contract
 * events, tx/events and the mempool routes.
 */
import type { AnswerIdentity } from '../routes/route-spec.js';

const asObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** Why a 200 answer is not about `identity`, or undefined when it is. */
export function identityMismatch(identity: AnswerIdentity | undefined, json: unknown): string | undefined {
  if (!identity) return undefined;
  const body = asObject(json);
  if (!body) return 'the answer is not an object';
  switch (identity.kind) {
    case 'transaction':
      return txMismatch(identity.txId, body);
    case 'tx_with_transfers': {
      const tx = asObject(body.tx);
      return tx ? txMismatch(identity.txId, tx) : 'the answer carries no tx';
    }
    case 'block':
      return blockMismatch(identity.ref, body);
    case 'burn_block':
      return body.burn_block_height === identity.burnHeight
        ? undefined
        : `asked for burn block ${identity.burnHeight}, got burn_block_height ${String(body.burn_block_height)}`;
    case 'transaction_list':
      return listMismatch(identity.txIds, body);
  }
}

function txMismatch(asked: string, tx: Record<string, unknown>): string | undefined {
  // The upstream's ids are lower-case hex; the request's were lower-cased by resolve().
  const answered = typeof tx.tx_id === 'string' ? tx.tx_id.toLowerCase() : undefined;
  return answered === asked.toLowerCase() ? undefined : `asked for tx ${asked}, got tx_id ${String(tx.tx_id)}`;
}

function blockMismatch(ref: Extract<AnswerIdentity, { kind: 'block' }>['ref'], block: Record<string, unknown>): string | undefined {
  // Whatever was asked, a block has a height and an index block hash.
  if (typeof block.height !== 'number' || typeof block.index_block_hash !== 'string') return 'the answer is not a block';
  if (ref === 'latest') return undefined;
  if ('height' in ref) return block.height === ref.height ? undefined : `asked for block ${ref.height}, got height ${block.height}`;
  // The upstream matches `block_hash = h OR index_block_hash = h`: either may be what was asked.
  const hash = ref.hash.toLowerCase();
  const matches = block.index_block_hash.toLowerCase() === hash || (typeof block.hash === 'string' && block.hash.toLowerCase() === hash);
  return matches ? undefined : `asked for block ${ref.hash}, got ${block.index_block_hash}`;
}

/**
 * A tx/multiple answer (upstream-contract §4.6) is keyed by the DB tx_id (lower case) for a found
 * transaction and by the id as requested for a missing one, and each member's result carries
 * that same tx_id. Every asked id is answered, and nothing else is.
 */
function listMismatch(askedIds: readonly string[], list: Record<string, unknown>): string | undefined {
  const asked = new Set(askedIds);
  const askedLower = new Set(askedIds.map((id) => id.toLowerCase()));
  for (const [key, value] of Object.entries(list)) {
    const member = asObject(value);
    const result = asObject(member?.result);
    if (!member || !result) return `member ${key} is not a tx/multiple member`;
    if (result.tx_id !== key) return `member ${key} carries tx_id ${String(result.tx_id)}`;
    const found = member.found === true;
    if (found ? !askedLower.has(key) : !asked.has(key)) return `the answer holds ${key}, which was not asked for`;
  }
  for (const id of asked) {
    const lower = id.toLowerCase();
    const answered = Object.hasOwn(list, id) || asObject(list[lower])?.found === true;
    if (!answered) return `the answer leaves out ${id}`;
  }
  return undefined;
}
