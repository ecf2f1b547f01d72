/** The shapes the chain model keeps: blocks and transactions as the upstream serializes them. */

/** The `/extended/v2/blocks` body; key order is the upstream's, since bodies are JSON.stringify'd. */
export interface NakamotoBlock {
  canonical: boolean;
  height: number;
  hash: string;
  block_time: number;
  block_time_iso: string;
  tenure_height: number;
  index_block_hash: string;
  parent_block_hash: string;
  parent_index_block_hash: string;
  burn_block_time: number;
  burn_block_time_iso: string;
  burn_block_hash: string;
  burn_block_height: number;
  miner_txid: string;
  tx_count: number;
  execution_cost_read_count: number;
  execution_cost_read_length: number;
  execution_cost_runtime: number;
  execution_cost_write_count: number;
  execution_cost_write_length: number;
}

export interface ChainBlock {
  block: NakamotoBlock;
  /** In the legacy `txs` order: tx_index descending. */
  txIds: string[];
}

/** A `/extended/v1/tx/<id>` body in the upstream's key order. */
export type TxBody = Record<string, unknown>;

export interface ChainTx {
  body: TxBody;
  /** The block that mined it; undefined while it is pending. */
  blockIndexHash?: string;
}
