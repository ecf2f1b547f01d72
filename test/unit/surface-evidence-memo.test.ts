/**
 * The deploy evidence remembers each contract's deploy tx id (issue 28: no repeated contract
 * lookups): the contract_info read is made once per contract, while the transaction's entry
 * decides finality every time, and an id whose transaction no longer proves the deploy is
 * forgotten and read again.
 */
import { describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../src/cache/entry.js';
import { createSurfaceEvidence, type EvidenceReads } from '../../src/surface/evidence.js';
import { entry } from '../support/entries.js';

const ADDRESS = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const CONTRACT = `${ADDRESS}.token`;
const TX = `0x${'12'.repeat(32)}`;
const OTHER_TX = `0x${'34'.repeat(32)}`;

/** A stored JSON answer (final at height 80 unless told otherwise). */
const stored = (body: unknown, extra: Partial<CacheEntry> = {}): CacheEntry => entry(JSON.stringify(body), { cls: 'final', height: 80, ...extra });
const deployOf = (txId: string) => ({ tx_id: txId, tx_type: 'smart_contract', tx_status: 'success', smart_contract: { contract_id: CONTRACT } });

/** Reads answering from two mutable slots, counting each kind. */
function countingReads(state: { contract: CacheEntry | undefined; tx: Map<string, CacheEntry> }) {
  const counts = { contract: 0, transaction: 0 };
  const reads: EvidenceReads = {
    contract: () => {
      counts.contract++;
      return Promise.resolve(state.contract);
    },
    transaction: (txId) => {
      counts.transaction++;
      return Promise.resolve(state.tx.get(txId));
    },
    block: () => Promise.resolve(undefined),
  };
  return { reads, counts };
}

describe('deploy evidence', () => {
  it('reads a contract record once, and checks the deploy transaction every time', async () => {
    const state = { contract: stored({ contract_id: CONTRACT, tx_id: TX }, { cls: 'tip' }), tx: new Map([[TX, stored(deployOf(TX))]]) };
    const { reads, counts } = countingReads(state);
    const evidence = createSurfaceEvidence(reads);
    for (let i = 0; i < 5; i++) expect(await evidence.deployFinal(CONTRACT)).toEqual({ height: 80 });
    expect(counts).toEqual({ contract: 1, transaction: 5 });
  });

  it('keeps the id of a deploy not final yet, gives no evidence until it is', async () => {
    const state = {
      contract: stored({ contract_id: CONTRACT, tx_id: TX }, { cls: 'tip' }),
      tx: new Map([[TX, stored(deployOf(TX), { cls: 'tip', height: undefined })]]),
    };
    const { reads, counts } = countingReads(state);
    const evidence = createSurfaceEvidence(reads);
    expect(await evidence.deployFinal(CONTRACT)).toBeUndefined();
    state.tx.set(TX, stored(deployOf(TX), { height: 91 }));
    expect(await evidence.deployFinal(CONTRACT)).toEqual({ height: 91 });
    expect(counts.contract).toBe(1);
  });

  it('forgets an id whose transaction no longer proves the deploy (a reorg moved it), and reads the contract again', async () => {
    const state = { contract: stored({ contract_id: CONTRACT, tx_id: TX }, { cls: 'tip' }), tx: new Map([[TX, stored(deployOf(TX))]]) };
    const { reads, counts } = countingReads(state);
    const evidence = createSurfaceEvidence(reads);
    expect(await evidence.deployFinal(CONTRACT)).toEqual({ height: 80 });
    // The deploy's block was orphaned: the old transaction is gone, another one deploys the contract.
    state.tx.delete(TX);
    state.contract = stored({ contract_id: CONTRACT, tx_id: OTHER_TX }, { cls: 'tip' });
    state.tx.set(OTHER_TX, stored(deployOf(OTHER_TX), { height: 85 }));
    expect(await evidence.deployFinal(CONTRACT)).toBeUndefined();
    expect(await evidence.deployFinal(CONTRACT)).toEqual({ height: 85 });
    expect(counts.contract).toBe(2);
  });

  it('remembers nothing when the contract record names no deploy', async () => {
    const state = { contract: stored({ error: 'not found' }, { status: 404, cls: 'tip' }), tx: new Map<string, CacheEntry>() };
    const { reads, counts } = countingReads(state);
    const evidence = createSurfaceEvidence(reads);
    expect(await evidence.deployFinal(CONTRACT)).toBeUndefined();
    expect(await evidence.deployFinal(CONTRACT)).toBeUndefined();
    expect(counts).toEqual({ contract: 2, transaction: 0 });
  });
});
