/** The chain as recorded (blocks 1..50, their txs, the mempool ETag): where the chain model starts. */
import { findRecording, recordingsMatching } from '../fixtures.js';
import type { ChainBlock, ChainTx, NakamotoBlock, TxBody } from './model.js';
import { unquote } from './primitives.js';

/** Blocks 1..tip and their txs, as recorded. */
export function recordedChain(): { blocks: ChainBlock[]; txs: Map<string, ChainTx> } {
  const bodies = recordingsMatching(/^\/extended\/v1\/tx\/0x[0-9a-f]{64}$/).map((rec) => JSON.parse(rec.body) as TxBody);
  const legacyTxIds = recordedLegacyTxIds();
  const blocks = recordedBlocks().map((block) => ({
    block,
    txIds: legacyTxIds.get(block.index_block_hash) ?? minedAt(block.height, bodies),
  }));
  const txs = new Map<string, ChainTx>();
  for (const body of bodies) {
    const height = typeof body.block_height === 'number' ? body.block_height : undefined;
    const blockIndexHash = height === undefined ? undefined : blocks[height - 1]?.block.index_block_hash;
    txs.set(String(body.tx_id), { body, blockIndexHash });
  }
  return { blocks, txs };
}

export function recordedMempoolEtag(): string {
  const etag = findRecording('/extended/v2/mempool/fees')?.headers.etag;
  if (!etag) throw new Error('the recordings hold no mempool ETag');
  return unquote(etag);
}

export function recordedBlocks(): NakamotoBlock[] {
  const blocks = recordingsMatching(/^\/extended\/v2\/blocks\/\d+$/)
    .map((rec) => JSON.parse(rec.body) as NakamotoBlock)
    .sort((a, b) => a.height - b.height);
  blocks.forEach((block, i) => {
    if (block.height !== i + 1) throw new Error(`recorded block ${i + 1} is missing`);
  });
  return blocks;
}

/** by_burn_block_height shows only the highest block of each burn block: the exact `txs` lists of those. */
export function recordedLegacyTxIds(): Map<string, string[]> {
  return new Map(
    recordingsMatching(/^\/extended\/v1\/block\/by_burn_block_height\/\d+$/).map((rec) => {
      const legacy = JSON.parse(rec.body) as { index_block_hash: string; txs: string[] };
      return [legacy.index_block_hash, legacy.txs];
    }),
  );
}

export function minedAt(height: number, bodies: TxBody[]): string[] {
  return bodies
    .filter((body) => body.block_height === height)
    .sort((a, b) => Number(b.tx_index) - Number(a.tx_index))
    .map((body) => String(body.tx_id));
}
