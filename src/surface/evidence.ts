/**
 * Evidence that a surface answer is final, from reads the proxy already trusts: the 13 routes'
 * reads, which store a transaction or block as final only when the block it names is the
 * verified canonical one at or below the finality watermark.
 * - A contract's deploy is final: `/extended/v1/contract/{id}` (a surface read, contract_info)
 *   names its deploy `tx_id`; that transaction read through /extended/v1/tx/{id} is final, a
 *   successful smart_contract deploy, and deploys this very contract id.
 * - A pinned tip is final: /extended/v2/blocks/0x{hash} read as final, and naming that block by
 *   its index block hash.
 * The reads go through the cache (usually hits); any failure is no evidence.
 *
 * A contract's deploy tx id is remembered once read (bounded, `DeployTxIds`): a contract id is
 * deployed once, so the id the upstream named stays the one to check, and the check itself (the
 * transaction's final entry) is what makes an answer final, every time. Without it, each block
 * sent a contract_info read upstream for every contract asked about (its chain_tip ETag moves
 * with the tip): 20 requests per 1,000 client requests on the bench's real mix. An id whose
 * transaction no longer proves the deploy (a reorg, another answer) is forgotten and read again.
 */
import { LRUCache } from 'lru-cache';
import type { CacheEntry } from '../cache/entry.js';
import { parseJson } from '../cache/policy.js';
import type { FinalEvidence } from './admit-surface.js';
import type { SurfaceEvidence } from './surface-spec.js';

export interface EvidenceReads {
  /** /extended/v1/tx/{txId} read through the cache (13-route tx_by_id): the entry served, if any. */
  transaction(txId: string): Promise<CacheEntry | undefined>;
  /** /extended/v2/blocks/0x{hash} read through the cache (13-route block). */
  block(indexBlockHash: string): Promise<CacheEntry | undefined>;
  /** /extended/v1/contract/{contractId} read through the cache (surface family contract_info). */
  contract(contractId: string): Promise<CacheEntry | undefined>;
}

const asObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

const bodyOf = (entry: CacheEntry | undefined): Record<string, unknown> | undefined => (entry?.status === 200 ? asObject(parseJson(entry.body)) : undefined);

const TX_ID = /^0x[0-9a-fA-F]{64}$/;
/** A contract id as Clarity spells one (c32 address, a dot, a contract name): anything else is asked about nowhere. */
const CONTRACT_ID = /^S[0-9A-Z]{27,40}\.[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;

/** The deploy tx id the upstream names for a contract, if the entry is that contract's. */
export function deployTxIdOf(entry: CacheEntry | undefined, contractId: string): string | undefined {
  const body = bodyOf(entry);
  if (!body || body.contract_id !== contractId || typeof body.tx_id !== 'string' || !TX_ID.test(body.tx_id)) return undefined;
  return body.tx_id.toLowerCase();
}

/** Whether the entry is transaction `txId`, a successful deploy of `contractId` (final or not). */
function isDeployOf(entry: CacheEntry | undefined, txId: string, contractId: string): boolean {
  const tx = bodyOf(entry);
  const contract = asObject(tx?.smart_contract);
  if (!tx || typeof tx.tx_id !== 'string' || tx.tx_id.toLowerCase() !== txId) return false;
  return tx.tx_type === 'smart_contract' && tx.tx_status === 'success' && contract?.contract_id === contractId;
}

/** Final evidence from the deploy transaction's entry: final, a successful deploy of `contractId`. */
export function deployEvidenceOf(entry: CacheEntry | undefined, txId: string, contractId: string): FinalEvidence | undefined {
  if (!entry || entry.cls !== 'final' || entry.height === undefined) return undefined;
  return isDeployOf(entry, txId, contractId) ? { height: entry.height } : undefined;
}

/** Final evidence from a block's entry: final, and that very block by its index block hash. */
export function blockEvidenceOf(entry: CacheEntry | undefined, indexBlockHash: string): FinalEvidence | undefined {
  if (!entry || entry.cls !== 'final' || entry.height === undefined) return undefined;
  const block = bodyOf(entry);
  if (typeof block?.index_block_hash !== 'string' || block.index_block_hash.toLowerCase() !== `0x${indexBlockHash}`) return undefined;
  return block.height === entry.height ? { height: entry.height } : undefined;
}

/** Contracts whose deploy tx id is remembered at most (each entry: a contract id and a tx id, under 300 bytes). */
export const DEPLOY_TX_IDS_MAX = 10_000;

export function createSurfaceEvidence(reads: EvidenceReads): SurfaceEvidence {
  const deployTxIds = new LRUCache<string, string>({ max: DEPLOY_TX_IDS_MAX });
  async function deployTxIdFor(contractId: string): Promise<string | undefined> {
    const known = deployTxIds.get(contractId);
    if (known !== undefined) return known;
    const txId = deployTxIdOf(await reads.contract(contractId), contractId);
    if (txId !== undefined) deployTxIds.set(contractId, txId);
    return txId;
  }
  return {
    async deployFinal(contractId) {
      if (!CONTRACT_ID.test(contractId)) return undefined;
      const txId = await deployTxIdFor(contractId);
      if (txId === undefined) return undefined;
      const entry = await reads.transaction(txId);
      // No longer that deploy (not found, dropped, another answer): the id is read again next
      // time (a reorg may have moved the deploy). A deploy not final yet keeps it.
      if (!isDeployOf(entry, txId, contractId)) deployTxIds.delete(contractId);
      return deployEvidenceOf(entry, txId, contractId);
    },
    async blockFinal(indexBlockHash) {
      return blockEvidenceOf(await reads.block(indexBlockHash), indexBlockHash);
    },
  };
}
