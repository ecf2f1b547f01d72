/**
 * Recorded bodies that embed mined transactions (address transaction lists, with_transfers) name
 * the block each was mined in. After a reorg re-mined one into another block, the upstream names
 * the new block there too (its lists are read from the same txs rows as /tx/{id}): the replayed
 * body gets the placement the chain model gives the tx now. Bodies without a moved tx are
 * replayed untouched, so the recorded state stays byte for byte.
 */
import type { FakeChain } from './chain.js';
import type { TxBody } from './model.js';

/** The fields that say where a mined tx sits (bodies.ts placement, and its parent block). */
const PLACEMENT_KEYS = [
  'block_hash',
  'block_height',
  'block_time',
  'block_time_iso',
  'burn_block_time',
  'burn_block_height',
  'burn_block_time_iso',
  'parent_burn_block_time',
  'parent_burn_block_time_iso',
  'canonical',
  'parent_block_hash',
] as const;

export function relocateMovedTxs(body: string, chain: FakeChain): string {
  const moved = chain.movedTxIds().filter((id) => body.includes(id));
  if (moved.length === 0) return body;
  const json = JSON.parse(body) as unknown;
  relocate(json, chain, new Set(moved));
  return JSON.stringify(json);
}

function relocate(value: unknown, chain: FakeChain, moved: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) relocate(item, chain, moved);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const record = value as TxBody;
  const id = record.tx_id;
  if (typeof id === 'string' && moved.has(id) && 'block_hash' in record) {
    const now = chain.findTx(id)?.body;
    // Only the keys the recorded shape has, in its order.
    if (now) for (const key of PLACEMENT_KEYS) if (key in record && key in now) record[key] = now[key];
  }
  for (const child of Object.values(record)) relocate(child, chain, moved);
}
