/**
 * JSON bodies in the upstream's shapes (recorded fixtures, OpenAPI), built from a snapshot.
 * Key order is fixed, so a body is byte-deterministic per snapshot.
 */
import { blockAt, lastPendingOf, tipOf, type Account, type Block, type MinedTx, type Snapshot, type TxCore } from './model.js';

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();

function txBase(core: TxCore): Record<string, unknown> {
  return {
    tx_id: core.txId,
    nonce: core.nonce,
    fee_rate: String(core.fee),
    sender_address: core.sender,
    sponsored: false,
    post_condition_mode: 'allow',
    post_conditions: [],
    anchor_mode: 'any',
  };
}

function payloadOf(core: TxCore): Record<string, unknown> {
  if (core.kind === 'token_transfer') {
    return { tx_type: 'token_transfer', token_transfer: { recipient_address: core.recipient, amount: String(core.amount ?? 0n), memo: core.memo } };
  }
  if (core.kind === 'smart_contract')
    return { tx_type: 'smart_contract', smart_contract: { clarity_version: 3, contract_id: core.contractId, source_code: core.source } };
  return {
    tx_type: 'contract_call',
    contract_call: { contract_id: core.contractId, function_name: core.functionName, function_signature: '', function_args: core.args },
  };
}

/** A confirmed transaction (v1 `Transaction`), with its events up to `eventLimit`. */
export function minedTxJson(s: Snapshot, tx: MinedTx, eventLimit = 96): Record<string, unknown> {
  const block = blockAt(s, tx.height) as Block;
  const parent = blockAt(s, tx.height - 1);
  return {
    ...txBase(tx.core),
    block_hash: block.hash,
    block_height: block.height,
    block_time: block.time,
    block_time_iso: iso(block.time),
    burn_block_time: block.burnTime,
    burn_block_height: block.burnHeight,
    burn_block_time_iso: iso(block.burnTime),
    parent_burn_block_time: parent?.burnTime ?? 0,
    parent_burn_block_time_iso: parent ? iso(parent.burnTime) : '',
    canonical: true,
    tx_index: tx.txIndex,
    tx_status: tx.status,
    tx_result: tx.result,
    event_count: tx.events.length,
    parent_block_hash: block.parentHash,
    is_unanchored: false,
    microblock_hash: '0x',
    microblock_sequence: 2147483647,
    microblock_canonical: true,
    execution_cost_read_count: 1,
    execution_cost_read_length: 1,
    execution_cost_runtime: 1,
    execution_cost_write_count: 1,
    execution_cost_write_length: 1,
    vm_error: null,
    events: tx.events.slice(0, eventLimit),
    ...payloadOf(tx.core),
  };
}

export function pendingTxJson(core: TxCore): Record<string, unknown> {
  return {
    ...txBase(core),
    tx_status: 'pending',
    replaced_by_tx_id: null,
    receipt_time: core.receiptTime,
    receipt_time_iso: iso(core.receiptTime),
    ...payloadOf(core),
  };
}

export function txJsonById(s: Snapshot, id: string): Record<string, unknown> | undefined {
  const mined = s.mined.get(id);
  if (mined) return minedTxJson(s, mined);
  const pending = s.mempool.find((t) => t.txId === id);
  return pending ? pendingTxJson(pending) : undefined;
}

/** `/extended/v2/blocks/:h` (NakamotoBlock). */
export function blockJson(block: Block): Record<string, unknown> {
  return {
    canonical: true,
    height: block.height,
    hash: block.hash,
    block_time: block.time,
    block_time_iso: iso(block.time),
    tenure_height: block.tenureHeight,
    index_block_hash: block.indexHash,
    parent_block_hash: block.parentHash,
    parent_index_block_hash: block.parentIndexHash,
    burn_block_time: block.burnTime,
    burn_block_time_iso: iso(block.burnTime),
    burn_block_hash: block.burnHash,
    burn_block_height: block.burnHeight,
    miner_txid: block.minerTxId,
    tx_count: block.txIds.length,
    execution_cost_read_count: 0,
    execution_cost_read_length: 0,
    execution_cost_runtime: 0,
    execution_cost_write_count: 0,
    execution_cost_write_length: 0,
  };
}

/** `/extended/v1/block/*` (the legacy Block, with its tx ids). */
export function legacyBlockJson(block: Block): Record<string, unknown> {
  const { parent_index_block_hash: _omit, tx_count: _count, ...rest } = blockJson(block);
  return { ...rest, txs: block.txIds };
}

export function stxBalanceJson(s: Snapshot, p: string): Record<string, unknown> {
  const account: Account = s.accounts.get(p) ?? { balance: 0n, nonce: 0, sent: 0n, received: 0n, fees: 0n };
  let outbound = 0n;
  let inbound = 0n;
  for (const tx of s.mempool) {
    if (tx.sender === p) outbound += tx.fee + (tx.amount ?? 0n);
    if (tx.recipient === p) inbound += tx.amount ?? 0n;
  }
  return {
    balance: String(account.balance),
    total_miner_rewards_received: '0',
    lock_tx_id: '',
    locked: '0',
    lock_height: 0,
    burnchain_lock_height: 0,
    burnchain_unlock_height: 0,
    estimated_balance: String(account.balance + inbound - outbound),
    pending_balance_inbound: String(inbound),
    pending_balance_outbound: String(outbound),
    total_sent: String(account.sent),
    total_received: String(account.received),
    total_fees_sent: String(account.fees),
  };
}

export function ftBalances(s: Snapshot, p: string): Array<{ token: string; balance: string }> {
  const amount = tipOf(s).contracts.tokens.get(p);
  return amount === undefined ? [] : [{ token: `${s.deployer}.wallet-token::wtoken`, balance: String(amount) }];
}

export function nftCounts(s: Snapshot, p: string): Record<string, { count: string; total_sent: string; total_received: string }> {
  let count = 0;
  for (const owner of tipOf(s).contracts.nftOwners.values()) if (owner === p) count++;
  return count ? { [`${s.deployer}.collectibles::collectible`]: { count: String(count), total_sent: '0', total_received: String(count) } } : {};
}

/** `/extended/v1/address/:p/nonces` from the confirmed nonce and the pending ones. */
export function noncesJson(s: Snapshot, p: string): Record<string, unknown> {
  const confirmed = s.accounts.get(p)?.nonce ?? 0;
  const pending = s.mempool
    .filter((t) => t.sender === p)
    .map((t) => t.nonce)
    .sort((a, b) => a - b);
  const max = pending.length ? Math.max(...pending) : undefined;
  const missing: number[] = [];
  if (max !== undefined) for (let n = confirmed; n < max; n++) if (!pending.includes(n)) missing.push(n);
  return {
    last_mempool_tx_nonce: max ?? null,
    last_executed_tx_nonce: confirmed > 0 ? confirmed - 1 : null,
    possible_next_nonce: max !== undefined && missing.length === 0 ? max + 1 : (missing[0] ?? confirmed),
    detected_missing_nonces: missing,
    detected_mempool_nonces: pending,
  };
}

/** A principal's confirmed transactions, newest first. */
export function principalMined(s: Snapshot, p: string): MinedTx[] {
  const ids = s.principalTxs.get(p) ?? [];
  const out: MinedTx[] = [];
  for (let i = ids.length - 1; i >= 0; i--) out.push(s.mined.get(ids[i] as string) as MinedTx);
  return out;
}

export function stxMoves(tx: MinedTx, p: string): { sent: bigint; received: bigint } {
  let sent = tx.core.sender === p ? tx.core.fee : 0n;
  let received = 0n;
  for (const e of tx.events) {
    if (e.event_type !== 'stx_asset') continue;
    if (e.asset.sender === p) sent += BigInt(e.asset.amount as string);
    if (e.asset.recipient === p) received += BigInt(e.asset.amount as string);
  }
  return { sent, received };
}

export function lastActivity(s: Snapshot, p: string): { confirmed?: string; pending?: string } {
  const ids = s.principalTxs.get(p);
  return { confirmed: ids?.[ids.length - 1], pending: lastPendingOf(s, p) };
}
