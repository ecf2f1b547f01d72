/**
 * The surface upstream's chain model: an immutable snapshot (blocks, burn blocks, mined and
 * pending transactions, accounts, contract state) and the pure transitions that replace it
 * (accept a transaction into the mempool, mine a block). Nothing here reads a clock or does
 * I/O: callers pass the time, so any snapshot's answers can be recomputed later.
 */
import { createHash } from 'node:crypto';
import {
  addressFromVersionHash,
  addressToString,
  AddressVersion,
  cvToHex,
  cvToString,
  deserializeTransaction,
  PayloadType,
  type ClarityValue,
  type StacksTransactionWire,
} from '@stacks/transactions';
import { EMPTY_CONTRACT_STATE, INTERFACES, isContractName, type ContractName, type ContractState } from './contracts.js';

export const sha256 = (data: string): string => createHash('sha256').update(data).digest('hex');
export const hex0x = (hex: string): string => (hex.startsWith('0x') ? hex : `0x${hex}`);

export interface FunctionArg {
  hex: string;
  repr: string;
  name: string;
  type: string;
}

/** What a transaction says, decoded once from its serialized bytes; never changes. */
export interface TxCore {
  txId: string; // 0x-prefixed
  raw: string; // 0x-prefixed serialized bytes
  sender: string;
  nonce: number;
  fee: bigint;
  receiptTime: number; // seconds
  kind: 'token_transfer' | 'contract_call' | 'smart_contract';
  recipient?: string;
  amount?: bigint;
  memo?: string;
  contractId?: string;
  functionName?: string;
  args?: FunctionArg[];
  argValues?: ClarityValue[];
  source?: string;
}

export interface TxEvent {
  event_index: number;
  event_type: 'stx_asset' | 'fungible_token_asset' | 'non_fungible_token_asset';
  tx_id: string;
  asset: Record<string, unknown>;
}

export interface MinedTx {
  core: TxCore;
  height: number;
  txIndex: number;
  status: 'success' | 'abort_by_response';
  result: { hex: string; repr: string };
  events: TxEvent[];
  /** Every principal the transaction touched: sender, recipients, contract, event parties. */
  principals: string[];
}

export interface Block {
  height: number;
  hash: string;
  indexHash: string;
  parentHash: string;
  parentIndexHash: string;
  burnHeight: number;
  burnHash: string;
  burnTime: number;
  time: number;
  tenureHeight: number;
  txIds: string[];
  minerTxId: string;
  /** Every contract's state after this block: what call-read with `?tip=` this block reads. */
  contracts: ContractState;
}

export interface Account {
  balance: bigint;
  /** The next nonce the chain expects (confirmed only). */
  nonce: number;
  sent: bigint;
  received: bigint;
  fees: bigint;
}

export interface Snapshot {
  /** Increases by one with each change. */
  seq: number;
  /** ms: when it became current (set by whoever installs it). */
  at: number;
  deployer: string;
  blocks: readonly Block[]; // index = height - 1
  mined: ReadonlyMap<string, MinedTx>;
  mempool: readonly TxCore[]; // by receipt
  mempoolDigest: string;
  accounts: ReadonlyMap<string, Account>;
  /** Confirmed transactions touching each principal, oldest first. */
  principalTxs: ReadonlyMap<string, readonly string[]>;
  names: ReadonlyMap<string, string>;
  burnEvery: number;
  firstBurnHeight: number;
  /**
   * The burn chain's tip: what /extended and /v2/info report as burn_block_height (upstream-contract
   * §5). At or above the tip block's anchor: above it after burn blocks without a Stacks block
   * (mineBurnBlocks), until the next block opens its tenure in the newest one.
   */
  burnTip: { height: number; time: number };
}

export const tipOf = (s: Snapshot): Block => s.blocks[s.blocks.length - 1] as Block;
export const blockAt = (s: Snapshot, height: number): Block | undefined => s.blocks[height - 1];
export const contractId = (s: Snapshot, name: ContractName): string => `${s.deployer}.${name}`;

export function emptyAccount(): Account {
  return { balance: 0n, nonce: 0, sent: 0n, received: 0n, fees: 0n };
}

/** Decodes a serialized transaction as the node would; throws on bytes it cannot read. */
export function decodeTransaction(raw: string, receiptTime: number): TxCore {
  const tx: StacksTransactionWire = deserializeTransaction(raw.replace(/^0x/, ''));
  const condition = tx.auth.spendingCondition;
  const version = tx.transactionVersion === 0 ? AddressVersion.MainnetSingleSig : AddressVersion.TestnetSingleSig;
  const sender = addressToString(addressFromVersionHash(version, condition.signer));
  const core: TxCore = {
    txId: hex0x(tx.txid()),
    raw: hex0x(tx.serialize()),
    sender,
    nonce: Number(condition.nonce),
    fee: BigInt(condition.fee),
    receiptTime,
    kind: 'token_transfer',
  };
  const payload = tx.payload;
  if (payload.payloadType === PayloadType.TokenTransfer) {
    core.recipient = cvToString(payload.recipient);
    core.amount = BigInt(payload.amount);
    core.memo = `0x${Buffer.from(payload.memo.content.padEnd(34, '\0'), 'latin1').toString('hex')}`;
  } else if (payload.payloadType === PayloadType.ContractCall) {
    core.kind = 'contract_call';
    const address = addressToString(payload.contractAddress);
    core.contractId = `${address}.${payload.contractName.content}`;
    core.functionName = payload.functionName.content;
    core.argValues = payload.functionArgs;
    core.args = payload.functionArgs.map((value, i) => ({
      hex: cvToHex(value),
      repr: cvToString(value),
      ...argMeta(payload.contractName.content, core.functionName as string, i),
    }));
  } else if (payload.payloadType === PayloadType.SmartContract || payload.payloadType === PayloadType.VersionedSmartContract) {
    core.kind = 'smart_contract';
    core.contractId = `${sender}.${payload.contractName.content}`;
    core.source = payload.codeBody.content;
  } else {
    throw new Error(`unsupported payload type ${payload.payloadType}`);
  }
  return core;
}

function argMeta(contract: string, functionName: string, index: number): { name: string; type: string } {
  if (!isContractName(contract)) return { name: `arg${index}`, type: 'unknown' };
  const abi = INTERFACES[contract] as { functions: Array<{ name: string; args: Array<{ name: string; type: unknown }> }> };
  const arg = abi.functions.find((f) => f.name === functionName)?.args[index];
  if (!arg) return { name: `arg${index}`, type: 'unknown' };
  return { name: arg.name, type: typeof arg.type === 'string' ? arg.type.replace('uint128', 'uint') : JSON.stringify(arg.type) };
}

export type Acceptance =
  | { ok: true; snapshot: Snapshot; duplicate: boolean }
  | { ok: false; reason: 'BadNonce' | 'ConflictingNonceInMempool' | 'NotEnoughFunds'; reasonData?: Record<string, unknown> };

/** The node's mempool admission: nonce not already used, no pending tx with that nonce, funds. */
export function acceptTransaction(s: Snapshot, tx: TxCore): Acceptance {
  if (s.mined.has(tx.txId) || s.mempool.some((p) => p.txId === tx.txId)) return { ok: true, snapshot: s, duplicate: true };
  const account = s.accounts.get(tx.sender) ?? emptyAccount();
  if (tx.nonce < account.nonce) {
    return { ok: false, reason: 'BadNonce', reasonData: { expected: account.nonce, actual: tx.nonce, is_origin: true, principal: tx.sender } };
  }
  if (s.mempool.some((p) => p.sender === tx.sender && p.nonce === tx.nonce)) return { ok: false, reason: 'ConflictingNonceInMempool' };
  const needed = tx.fee + (tx.amount ?? 0n);
  if (account.balance < needed) {
    return { ok: false, reason: 'NotEnoughFunds', reasonData: { expected: `0x${needed.toString(16)}`, actual: `0x${account.balance.toString(16)}` } };
  }
  return { ok: true, snapshot: withMempool(s, [...s.mempool, tx]), duplicate: false };
}

function withMempool(s: Snapshot, mempool: readonly TxCore[]): Snapshot {
  return { ...s, seq: s.seq + 1, mempool, mempoolDigest: digestOf(mempool) };
}

/** XOR of the pending tx ids (as the upstream's v7 `bit_xor` digest): any add or removal changes it. */
export function digestOf(mempool: readonly TxCore[]): string {
  const acc = Buffer.alloc(32);
  for (const tx of mempool) {
    const id = Buffer.from(tx.txId.slice(2), 'hex');
    for (let i = 0; i < 32; i++) acc[i] = (acc[i] as number) ^ (id[i] as number);
  }
  return acc.toString('hex');
}

/** Mines `count` burn blocks at `timeSeconds` with no Stacks block: only the burn tip moves. */
export function mineBurnBlocks(s: Snapshot, count: number, timeSeconds: number): Snapshot {
  if (!Number.isInteger(count) || count < 1) throw new RangeError('mineBurnBlocks(count) must be an integer >= 1');
  return { ...s, seq: s.seq + 1, burnTip: { height: s.burnTip.height + count, time: timeSeconds } };
}

/** Transactions mined per block at most. */
const BLOCK_CAPACITY = 200;

/**
 * Mines the next block at `timeSeconds`: the pending transactions each sender can execute in
 * nonce order (a gap waits), their effects on accounts and contracts, and a new burn block
 * every `burnEvery` Stacks blocks; after burn blocks without a Stacks block, a new tenure in the
 * newest of them.
 */
/**
 * `lateInTenure`: the block is the last of the tip's tenure although a newer burn block is
 * announced (Nakamoto: the old tenure's miner may still produce blocks until the new tenure's
 * first one), so it is anchored at the tip's burn height, below the burn tip.
 */
export function mineBlock(s: Snapshot, timeSeconds: number, options: { lateInTenure?: boolean } = {}): Snapshot {
  const parent = tipOf(s);
  const height = parent.height + 1;
  const accounts = new Map(s.accounts);
  const mined = new Map(s.mined);
  const principalTxs = new Map(s.principalTxs);
  let contracts = parent.contracts;
  const included: TxCore[] = [];
  let progress = true;
  let pending = [...s.mempool];
  while (progress && included.length < BLOCK_CAPACITY) {
    progress = false;
    const rest: TxCore[] = [];
    for (const tx of pending) {
      const account = accounts.get(tx.sender) ?? emptyAccount();
      const cost = tx.fee + (tx.amount ?? 0n);
      if (included.length < BLOCK_CAPACITY && tx.nonce === account.nonce && account.balance >= cost) {
        included.push(tx);
        progress = true;
        const effect = applyTx(s.deployer, tx, contracts, accounts);
        contracts = effect.contracts;
        const minedTx: MinedTx = { core: tx, height, txIndex: included.length - 1, ...effect.outcome };
        mined.set(tx.txId, minedTx);
        for (const p of minedTx.principals) principalTxs.set(p, [...(principalTxs.get(p) ?? []), tx.txId]);
      } else rest.push(tx);
    }
    pending = rest;
  }
  // A pending tx whose nonce is now used by a mined one can never be mined: dropped, as the node prunes it.
  pending = pending.filter((tx) => tx.nonce >= (accounts.get(tx.sender) ?? emptyAccount()).nonce);
  // A burn block no Stacks block is anchored in yet (the burn tip ahead): the tenure opens there.
  const announced = s.burnTip.height > parent.burnHeight && options.lateInTenure !== true;
  const newBurn = announced || (options.lateInTenure !== true && (height - 1) % s.burnEvery === 0);
  const burnHeight = announced ? s.burnTip.height : newBurn ? parent.burnHeight + 1 : parent.burnHeight;
  const burnTime = announced ? s.burnTip.time : newBurn ? timeSeconds : parent.burnTime;
  const hash = `0x${sha256(`block:${height}:${parent.indexHash}:${included.map((t) => t.txId).join(',')}:${timeSeconds}`)}`;
  const block: Block = {
    height,
    hash,
    indexHash: `0x${sha256(`index:${hash}`)}`,
    parentHash: parent.hash,
    parentIndexHash: parent.indexHash,
    burnHeight,
    burnHash: newBurn ? `0x${sha256(`burn:${burnHeight}`)}` : parent.burnHash,
    burnTime,
    time: timeSeconds,
    tenureHeight: parent.tenureHeight + (newBurn ? 1 : 0),
    txIds: included.map((t) => t.txId),
    minerTxId: `0x${sha256(`miner:${height}`)}`,
    contracts,
  };
  const burnTip = burnHeight > s.burnTip.height ? { height: burnHeight, time: burnTime } : s.burnTip;
  return { ...s, seq: s.seq + 1, blocks: [...s.blocks, block], mined, accounts, principalTxs, mempool: pending, mempoolDigest: digestOf(pending), burnTip };
}

/** A genesis block: no transactions, every account funded, contracts empty. */
export function genesisSnapshot(deployer: string, balances: Map<string, bigint>, names: Map<string, string>, timeSeconds: number, burnEvery: number): Snapshot {
  const firstBurnHeight = 100;
  const hash = `0x${sha256('genesis')}`;
  const block: Block = {
    height: 1,
    hash,
    indexHash: `0x${sha256(`index:${hash}`)}`,
    parentHash: `0x${'0'.repeat(64)}`,
    parentIndexHash: `0x${'0'.repeat(64)}`,
    burnHeight: firstBurnHeight,
    burnHash: `0x${sha256(`burn:${firstBurnHeight}`)}`,
    burnTime: timeSeconds,
    time: timeSeconds,
    tenureHeight: 1,
    txIds: [],
    minerTxId: `0x${sha256('miner:1')}`,
    contracts: EMPTY_CONTRACT_STATE,
  };
  const accounts = new Map([...balances].map(([address, balance]) => [address, { ...emptyAccount(), balance, received: balance }]));
  return {
    seq: 0,
    at: 0,
    deployer,
    blocks: [block],
    mined: new Map(),
    mempool: [],
    mempoolDigest: digestOf([]),
    accounts,
    principalTxs: new Map(),
    names,
    burnEvery,
    firstBurnHeight,
    burnTip: { height: firstBurnHeight, time: timeSeconds },
  };
}

interface Effect {
  contracts: ContractState;
  outcome: Pick<MinedTx, 'status' | 'result' | 'events' | 'principals'>;
}

const OK_TRUE = { hex: '0x0703', repr: '(ok true)' };

/** Applies one transaction to the accounts (in place: the caller's fresh copy) and the contract state. */
function applyTx(deployer: string, tx: TxCore, contracts: ContractState, accounts: Map<string, Account>): Effect {
  const sender = accounts.get(tx.sender) ?? emptyAccount();
  const principals = new Set([tx.sender]);
  const events: TxEvent[] = [];
  const event = (event_type: TxEvent['event_type'], asset: Record<string, unknown>) =>
    events.push({ event_index: events.length, event_type, tx_id: tx.txId, asset });
  accounts.set(tx.sender, {
    ...sender,
    balance: sender.balance - tx.fee - (tx.amount ?? 0n),
    nonce: tx.nonce + 1,
    fees: sender.fees + tx.fee,
    sent: sender.sent + (tx.amount ?? 0n),
  });
  if (tx.kind === 'token_transfer' && tx.recipient) {
    const recipient = accounts.get(tx.recipient) ?? emptyAccount();
    accounts.set(tx.recipient, { ...recipient, balance: recipient.balance + (tx.amount ?? 0n), received: recipient.received + (tx.amount ?? 0n) });
    principals.add(tx.recipient);
    event('stx_asset', { asset_event_type: 'transfer', sender: tx.sender, recipient: tx.recipient, amount: String(tx.amount ?? 0n) });
    return { contracts, outcome: { status: 'success', result: OK_TRUE, events, principals: [...principals] } };
  }
  if (tx.kind === 'smart_contract') {
    principals.add(tx.contractId as string);
    return { contracts, outcome: { status: 'success', result: OK_TRUE, events, principals: [...principals] } };
  }
  const id = tx.contractId as string;
  principals.add(id);
  const [address, name = ''] = id.split('.');
  const args = tx.argValues ?? [];
  const principalAt = (i: number) => {
    const v = args[i];
    return v && (v.type === 'address' || v.type === 'contract') ? v.value : undefined;
  };
  const uintAt = (i: number) => {
    const v = args[i];
    return v && v.type === 'uint' ? BigInt(v.value) : undefined;
  };
  const fail = (code: number): Effect => ({
    contracts,
    outcome: {
      status: 'abort_by_response',
      result: { hex: `0x08${'01' + code.toString(16).padStart(32, '0')}`, repr: `(err u${code})` },
      events,
      principals: [...principals],
    },
  });
  const okUint = (n: bigint) => ({ hex: `0x0701${n.toString(16).padStart(32, '0')}`, repr: `(ok u${n})` });
  if (address !== deployer) return fail(404);
  switch (`${name}.${tx.functionName}`) {
    case 'counter.increment': {
      const counter = contracts.counter + 1n;
      return { contracts: { ...contracts, counter }, outcome: { status: 'success', result: okUint(counter), events, principals: [...principals] } };
    }
    case 'counter.set-score': {
      const score = uintAt(0);
      if (score === undefined) return fail(1);
      const scores = new Map(contracts.scores).set(tx.sender, score);
      return { contracts: { ...contracts, scores }, outcome: { status: 'success', result: OK_TRUE, events, principals: [...principals] } };
    }
    case 'wallet-token.mint':
    case 'wallet-token.transfer': {
      const minting = tx.functionName === 'mint';
      const amount = uintAt(0);
      const from = minting ? undefined : principalAt(1);
      const to = principalAt(minting ? 1 : 2);
      if (amount === undefined || !to || (!minting && from !== tx.sender)) return fail(4);
      if (minting && tx.sender !== deployer) return fail(403);
      const tokens = new Map(contracts.tokens);
      if (from) {
        const have = tokens.get(from) ?? 0n;
        if (have < amount) return fail(1);
        tokens.set(from, have - amount);
      }
      tokens.set(to, (tokens.get(to) ?? 0n) + amount);
      principals.add(to);
      event('fungible_token_asset', {
        asset_event_type: minting ? 'mint' : 'transfer',
        asset_id: `${id}::wtoken`,
        sender: from ?? '',
        recipient: to,
        amount: String(amount),
      });
      const tokenSupply = contracts.tokenSupply + (minting ? amount : 0n);
      return { contracts: { ...contracts, tokens, tokenSupply }, outcome: { status: 'success', result: OK_TRUE, events, principals: [...principals] } };
    }
    case 'collectibles.mint': {
      const to = principalAt(0);
      if (!to) return fail(4);
      const lastNftId = contracts.lastNftId + 1n;
      const nftOwners = new Map(contracts.nftOwners).set(lastNftId, to);
      principals.add(to);
      event('non_fungible_token_asset', {
        asset_event_type: 'mint',
        asset_id: `${id}::collectible`,
        sender: '',
        recipient: to,
        value: { hex: cvHexUint(lastNftId), repr: `u${lastNftId}` },
      });
      return {
        contracts: { ...contracts, nftOwners, lastNftId },
        outcome: { status: 'success', result: okUint(lastNftId), events, principals: [...principals] },
      };
    }
    default:
      return fail(2);
  }
}

export const cvHexUint = (n: bigint): string => `0x01${n.toString(16).padStart(32, '0')}`;

/** The last mempool tx touching `p` (sender or token-transfer recipient), for the principal_mempool ETag. */
export function lastPendingOf(s: Snapshot, p: string): string | undefined {
  for (let i = s.mempool.length - 1; i >= 0; i--) {
    const tx = s.mempool[i] as TxCore;
    if (tx.sender === p || tx.recipient === p) return tx.txId;
  }
  return undefined;
}

/** NFTs a principal holds now, by asset. */
export function nftHoldings(s: Snapshot, p: string): Array<{ asset: string; id: bigint }> {
  const holdings: Array<{ asset: string; id: bigint }> = [];
  for (const [id, owner] of tipOf(s).contracts.nftOwners) if (owner === p) holdings.push({ asset: `${contractId(s, 'collectibles')}::collectible`, id });
  return holdings;
}
