/**
 * JSON bodies the chain model produces, in the upstream's key order (bodies are compared byte for
 * byte with the recorded ones, so key order matters).
 */
import type { FakeChain } from './chain.js';
import type { ChainBlock, ChainTx, NakamotoBlock, TxBody } from './model.js';

/** Where a mined tx sits, in the upstream's key order. */
export function placement(block: NakamotoBlock, parent: NakamotoBlock) {
  return {
    block_hash: block.hash,
    block_height: block.height,
    block_time: block.block_time,
    block_time_iso: block.block_time_iso,
    burn_block_time: block.burn_block_time,
    burn_block_height: block.burn_block_height,
    burn_block_time_iso: block.burn_block_time_iso,
    parent_burn_block_time: parent.burn_block_time,
    parent_burn_block_time_iso: parent.burn_block_time_iso,
    canonical: true,
  };
}

/** The mined shape of a pending token transfer, as the recorded mined transfers look. */
export function minedTokenTransfer(pending: TxBody, block: NakamotoBlock, parent: NakamotoBlock): TxBody {
  const transfer = pending.token_transfer as { recipient_address: string; amount: string; memo: string };
  return {
    tx_id: pending.tx_id,
    nonce: pending.nonce,
    fee_rate: pending.fee_rate,
    sender_address: pending.sender_address,
    sponsored: pending.sponsored,
    post_condition_mode: pending.post_condition_mode,
    post_conditions: pending.post_conditions,
    anchor_mode: pending.anchor_mode,
    ...placement(block, parent),
    tx_index: 0,
    tx_status: 'success',
    tx_result: { hex: '0x0703', repr: '(ok true)' },
    event_count: 1,
    parent_block_hash: block.parent_block_hash,
    is_unanchored: false,
    microblock_hash: '0x',
    microblock_sequence: 2147483647,
    microblock_canonical: true,
    execution_cost_read_count: 0,
    execution_cost_read_length: 0,
    execution_cost_runtime: 0,
    execution_cost_write_count: 0,
    execution_cost_write_length: 0,
    vm_error: null,
    events: [
      {
        event_index: 0,
        event_type: 'stx_asset',
        tx_id: pending.tx_id,
        asset: {
          asset_event_type: 'transfer',
          sender: pending.sender_address,
          recipient: transfer.recipient_address,
          amount: transfer.amount,
          memo: transfer.memo,
        },
      },
    ],
    tx_type: pending.tx_type,
    token_transfer: transfer,
  };
}

/** The legacy `Block` of by_burn_block_height (§4.12); Nakamoto blocks have no microblocks. */
export function legacyBlockJson({ block: b, txIds }: ChainBlock): string {
  return JSON.stringify({
    canonical: b.canonical,
    height: b.height,
    hash: b.hash,
    block_time: b.block_time,
    block_time_iso: b.block_time_iso,
    tenure_height: b.tenure_height,
    index_block_hash: b.index_block_hash,
    parent_block_hash: b.parent_block_hash,
    burn_block_time: b.burn_block_time,
    burn_block_time_iso: b.burn_block_time_iso,
    burn_block_hash: b.burn_block_hash,
    burn_block_height: b.burn_block_height,
    miner_txid: b.miner_txid,
    execution_cost_read_count: b.execution_cost_read_count,
    execution_cost_read_length: b.execution_cost_read_length,
    execution_cost_runtime: b.execution_cost_runtime,
    execution_cost_write_count: b.execution_cost_write_count,
    execution_cost_write_length: b.execution_cost_write_length,
    txs: txIds,
    parent_microblock_hash: '',
    parent_microblock_sequence: -1,
    microblocks_accepted: [],
    microblocks_streamed: [],
    microblock_tx_count: {},
  });
}

/** `searchTxs` (§4.6): mined txs by height (a stable sort: ties keep request order), then mempool, then unknown. */
export function searchTxs(chain: FakeChain, ids: string[]): string {
  const seen = new Set<string>();
  const mined: ChainTx[] = [];
  const pending: ChainTx[] = [];
  const missing: string[] = [];
  for (const id of ids) {
    const tx = chain.findTx(id);
    const key = tx ? String(tx.body.tx_id) : id;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!tx) missing.push(id);
    else if (tx.blockIndexHash === undefined) pending.push(tx);
    else mined.push(tx);
  }
  mined.sort((a, b) => Number(a.body.block_height) - Number(b.body.block_height));
  const entries = [
    ...[...mined, ...pending].map((tx) => `${JSON.stringify(tx.body.tx_id)}:{"found":true,"result":${JSON.stringify(tx.body)}}`),
    ...missing.map((id) => `${JSON.stringify(id)}:{"found":false,"result":{"tx_id":${JSON.stringify(id)}}}`),
  ];
  return `{${entries.join(',')}}`;
}
