/**
 * The surface upstream's answers: a pure function of (snapshot, request) → reply, for every
 * route it serves, with the upstream's ETag kind per route (read-surface.md §1.4) and the
 * `/v2` node RPC (no ETag, `no-store`). POST /v2/transactions is the one route that changes the
 * state: it is answered by the server (see server.ts), not here.
 */
import { Cl, hexToCV, type ClarityValue } from '@stacks/transactions';
import {
  blockJson,
  ftBalances,
  lastActivity,
  legacyBlockJson,
  minedTxJson,
  nftCounts,
  noncesJson,
  pendingTxJson,
  principalMined,
  stxBalanceJson,
  stxMoves,
  txJsonById,
} from './bodies.js';
import {
  callLibrary,
  callReadOnly,
  dataVar,
  INTERFACES,
  isContractName,
  libraryIndex,
  libraryInterface,
  librarySource,
  mapEntry,
  SOURCES,
  type ContractState,
} from './contracts.js';
import { blockAt, nftHoldings, sha256, tipOf, type Block, type MinedTx, type Snapshot } from './model.js';

export interface SurfaceRequest {
  method: string;
  path: string;
  /** The raw query, without `?`. */
  query: string;
  body: Buffer;
}

export interface Reply {
  status: number;
  body: string;
  /** Unquoted; absent: `Cache-Control: no-store`. */
  etag?: string;
  deprecated?: boolean;
  contentType?: string;
}

export interface AnswerOptions {
  /** ENABLE_DEPRECATED_ENDPOINTS=false: deprecated routes answer 410 Gone. */
  deprecatedGone?: boolean;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PRINCIPAL = /^[0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}(\.[a-zA-Z]([a-zA-Z0-9]|[-_]){0,39})?$/;
const TX_ID = /^(0x)?[a-fA-F0-9]{64}$/;
const GONE = { error: 'Gone', message: 'This endpoint has been disabled. See https://docs.hiro.so/stacks/api for more information' };
/** Bodies of POST reads the node reads at most (its own limit is larger; these are tiny). */
const MAX_POST_BODY = 64 * 1024;

const json = (status: number, body: unknown, etag?: string): Reply => ({ status, body: JSON.stringify(body), etag, contentType: JSON_TYPE });
const error = (status: number, message: string, etag?: string): Reply =>
  json(status, { statusCode: status, error: status === 404 ? 'Not Found' : 'Bad Request', message }, etag);
const validation = (message: string): Reply => json(400, { statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message });
const text = (status: number, body: string): Reply => ({ status, body, contentType: 'text/plain' });

type Kind = 'chain_tip' | 'mempool' | 'transaction' | 'block' | 'principal' | 'principal_mempool' | 'none';
type Handler = (s: Snapshot, params: string[], q: URLSearchParams, req: SurfaceRequest) => Reply;
interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  kind: Kind;
  deprecated: boolean;
  handle: Handler;
}

// ETags by kind (§1.4 of read-surface.md).
export const chainTipEtag = (s: Snapshot): string => tipOf(s).indexHash;
const txEtag = (s: Snapshot, id: string): string | undefined => {
  const mined = s.mined.get(id);
  if (mined) return sha256(`${id}:${(blockAt(s, mined.height) as Block).indexHash}::${mined.status}`);
  return s.mempool.some((t) => t.txId === id) ? sha256(`${id}:::pending`) : undefined;
};
const principalEtag = (s: Snapshot, p: string, withMempool: boolean): string | undefined => {
  const { confirmed, pending } = lastActivity(s, p);
  const middle = withMempool ? (pending ?? '') : '';
  if (!confirmed && !middle) return undefined;
  return sha256(`${confirmed ?? ''}:${middle}:unlocked`);
};

const paging = (q: URLSearchParams, max = 50): { limit: number; offset: number } | Reply => {
  const limit = q.has('limit') ? Number(q.get('limit')) : 20;
  const offset = q.has('offset') ? Number(q.get('offset')) : 0;
  if (!Number.isInteger(limit)) return validation('querystring/limit must be integer');
  if (limit > max) return validation(`querystring/limit must be <= ${max}`);
  if (limit < 0) return validation('querystring/limit must be >= 0');
  if (!Number.isInteger(offset) || offset < 0) return validation('querystring/offset must be >= 0');
  return { limit: limit || 20, offset };
};
const isReply = (x: unknown): x is Reply => typeof x === 'object' && x !== null && 'status' in x;
const page = <T>(items: T[], p: { limit: number; offset: number }) => ({
  limit: p.limit,
  offset: p.offset,
  total: items.length,
  results: items.slice(p.offset, p.offset + p.limit),
});

const blockParam = (s: Snapshot, param: string): Block | Reply => {
  if (param === 'latest') return tipOf(s);
  if (/^\d+$/.test(param)) return blockAt(s, Number(param)) ?? error(404, 'Block not found');
  if (TX_ID.test(param)) {
    const hash = (param.startsWith('0x') ? param : `0x${param}`).toLowerCase();
    return s.blocks.find((b) => b.indexHash === hash || b.hash === hash) ?? error(404, 'Block not found');
  }
  return validation(
    'params/height_or_hash must be equal to constant, params/height_or_hash must match pattern "^(0x)?[a-fA-F0-9]{64}$", params/height_or_hash must be integer, params/height_or_hash must match a schema in anyOf',
  );
};

const principalOr400 = (p: string): Reply | undefined =>
  PRINCIPAL.test(p) ? undefined : validation(`params/principal must match pattern "${PRINCIPAL.source}"`);

/** Transaction ids of the confirmed chain, newest first (block by block, last tx first). */
function recentMined(s: Snapshot, limit: number, offset: number): { total: number; ids: string[] } {
  const ids: string[] = [];
  let total = 0;
  for (let h = s.blocks.length; h >= 1; h--) {
    const block = s.blocks[h - 1] as Block;
    for (let i = block.txIds.length - 1; i >= 0; i--) {
      if (total >= offset && ids.length < limit) ids.push(block.txIds[i] as string);
      total++;
    }
  }
  return { total, ids };
}

function addressTransfers(s: Snapshot, p: string, limit: number, offset: number, v2: boolean): Reply {
  const txs = principalMined(s, p);
  const results = txs.slice(offset, offset + limit).map((tx) => {
    const { sent, received } = stxMoves(tx, p);
    const stx = tx.events.filter((e) => e.event_type === 'stx_asset' && (e.asset.sender === p || e.asset.recipient === p));
    const ft = tx.events.filter((e) => e.event_type === 'fungible_token_asset' && (e.asset.sender === p || e.asset.recipient === p));
    const nft = tx.events.filter((e) => e.event_type === 'non_fungible_token_asset' && (e.asset.sender === p || e.asset.recipient === p));
    const body = minedTxJson(s, tx);
    if (v2) {
      const count = (events: typeof stx, type: string) => events.filter((e) => e.asset.asset_event_type === type).length;
      const counts = (events: typeof stx) => ({ transfer: count(events, 'transfer'), mint: count(events, 'mint'), burn: count(events, 'burn') });
      return { tx: body, stx_sent: String(sent), stx_received: String(received), events: { stx: counts(stx), ft: counts(ft), nft: counts(nft) } };
    }
    return {
      tx: body,
      stx_sent: String(sent),
      stx_received: String(received),
      stx_transfers: stx.map((e) => ({ amount: e.asset.amount, sender: e.asset.sender, recipient: e.asset.recipient })),
      ft_transfers: ft.map((e) => ({ asset_identifier: e.asset.asset_id, amount: e.asset.amount, sender: e.asset.sender, recipient: e.asset.recipient })),
      nft_transfers: nft.map((e) => ({ asset_identifier: e.asset.asset_id, value: e.asset.value, sender: e.asset.sender, recipient: e.asset.recipient })),
    };
  });
  return json(200, { limit, offset, total: txs.length, results }, principalEtag(s, p, false));
}

function parseJsonBody(req: SurfaceRequest): unknown {
  if (req.body.length > MAX_POST_BODY) throw new Error('body too large');
  return JSON.parse(req.body.toString('utf8'));
}

/** The contract state a `/v2` read sees: the block `?tip=` names, else the tip's (unknown tips are ignored, §2.3). */
function stateAt(s: Snapshot, q: URLSearchParams): ContractState {
  const tip = q.get('tip');
  if (tip && TX_ID.test(tip)) {
    const hash = (tip.startsWith('0x') ? tip : `0x${tip}`).toLowerCase();
    const block = s.blocks.find((b) => b.indexHash === hash);
    if (block) return block.contracts;
  }
  return tipOf(s).contracts;
}

const contractOf = (s: Snapshot, address: string, name: string) => (address === s.deployer && isContractName(name) ? name : undefined);
const cvHex = (value: ClarityValue): string => `0x${Cl.serialize(value)}`;
/** A deployed library contract's number (contracts.ts), or undefined. */
const libraryOf = (s: Snapshot, address: string, name: string): number | undefined => {
  const index = address === s.deployer ? libraryIndex(name) : undefined;
  return index !== undefined && principalMined(s, `${address}.${name}`).length ? index : undefined;
};

function callRead(s: Snapshot, [address = '', name = '', fn = '']: string[], q: URLSearchParams, req: SurfaceRequest): Reply {
  let body: { sender?: unknown; arguments?: unknown };
  try {
    body = parseJsonBody(req) as typeof body;
  } catch {
    return text(400, 'Failed to parse JSON body');
  }
  if (typeof body?.sender !== 'string' || !Array.isArray(body.arguments) || !body.arguments.every((a) => typeof a === 'string')) {
    return text(400, 'Invalid read-only call: expected {sender, arguments}');
  }
  const contract = contractOf(s, address, name);
  const library = contract ? undefined : libraryOf(s, address, name);
  if (library !== undefined) {
    const result = callLibrary(library, fn);
    return result.ok ? json(200, { okay: true, result: cvHex(result.value) }) : json(200, { okay: false, cause: result.cause });
  }
  if (!contract) return json(200, { okay: false, cause: `Unchecked(NoSuchContract("${address}.${name}"))` });
  let args: ClarityValue[];
  try {
    args = (body.arguments as string[]).map((a) => hexToCV(a));
  } catch {
    return text(400, 'Failed to deserialize Clarity arguments');
  }
  const result = callReadOnly(contract, stateAt(s, q), fn, args);
  return result.ok ? json(200, { okay: true, result: cvHex(result.value) }) : json(200, { okay: false, cause: result.cause });
}

function mapEntryReply(s: Snapshot, [address = '', name = '', map = '']: string[], q: URLSearchParams, req: SurfaceRequest): Reply {
  let key: unknown;
  try {
    key = parseJsonBody(req);
  } catch {
    return text(400, 'Failed to parse JSON body');
  }
  if (typeof key !== 'string') return text(400, 'Map key must be a hex string');
  const contract = contractOf(s, address, name);
  if (!contract) return text(404, 'Contract not found');
  let keyValue: ClarityValue;
  try {
    keyValue = hexToCV(key);
  } catch {
    return text(400, 'Failed to deserialize map key');
  }
  const value = mapEntry(contract, stateAt(s, q), map, keyValue);
  return value ? json(200, { data: cvHex(value) }) : text(404, 'Map not found');
}

function feeEstimate(s: Snapshot, req: SurfaceRequest): Reply {
  let body: { transaction_payload?: unknown; estimated_len?: unknown };
  try {
    body = parseJsonBody(req) as typeof body;
  } catch {
    return text(400, 'Failed to parse JSON body');
  }
  if (typeof body?.transaction_payload !== 'string' || !/^(0x)?[0-9a-fA-F]+$/.test(body.transaction_payload)) {
    return json(400, { error: 'Estimation could not be performed', reason: 'InvalidPayload' });
  }
  // The fee market: the last block's fullness and the payload's length.
  const fullness = tipOf(s).txIds.length;
  const length = body.transaction_payload.length / 2 + (typeof body.estimated_len === 'number' ? body.estimated_len : 0);
  const scalar = 100 + length * 3 + fullness * 7;
  const rates = [1, 2, 4].map((m) => m * (1 + fullness));
  return json(200, {
    estimated_cost: { write_length: length, write_count: 1, read_length: 1000 + fullness, read_count: 5, runtime: 2000 + length },
    estimated_cost_scalar: scalar,
    estimations: rates.map((fee_rate) => ({ fee_rate, fee: Math.max(180, fee_rate * scalar) })),
    cost_scalar_change_by_byte: 0.00476837158203125,
  });
}

function v2Info(s: Snapshot): Record<string, unknown> {
  const tip = tipOf(s);
  return {
    peer_version: 4207599116,
    pox_consensus: tip.burnHash.slice(2, 42),
    // The node's burn view: the burn chain's tip (above the tip block's anchor after burn blocks without one).
    burn_block_height: s.burnTip.height,
    stable_pox_consensus: tip.burnHash.slice(2, 42),
    stable_burn_block_height: Math.max(0, s.burnTip.height - 7),
    server_version: 'stacks-node 3.1.0.0.7 (fake)',
    network_id: 2147483648,
    parent_network_id: 3669344250,
    stacks_tip_height: tip.height,
    stacks_tip: tip.hash.slice(2),
    stacks_tip_consensus_hash: tip.burnHash.slice(2, 42),
    genesis_chainstate_hash: '74237aa39aa50a83de11a4f53e9d3bb7d43461d1de9873f402e5453ae60bc59b',
    unanchored_tip: null,
    unanchored_seq: null,
    tenure_height: tip.tenureHeight,
    exit_at_block_height: null,
    is_fully_synced: true,
    node_public_key: '02fd8ac1a4d6d5d6d1b1b8bd4d5d3a2e6c6f7f5a0e1e3d2c4b5a697887766554433',
    node_public_key_hash: 'a7b3c1d2e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9',
    stackerdbs: [],
  };
}

const REWARD_CYCLE = 20;
function v2Pox(s: Snapshot): Record<string, unknown> {
  // PoX cycles turn with the burn chain's tip, blocks or not.
  const burnTip = s.burnTip.height;
  const cycle = Math.floor((burnTip - s.firstBurnHeight) / REWARD_CYCLE);
  const cycleStart = s.firstBurnHeight + cycle * REWARD_CYCLE;
  return {
    contract_id: 'ST000000000000000000002AMW42H.pox-4',
    pox_activation_threshold_ustx: 600057388429055,
    first_burnchain_block_height: s.firstBurnHeight,
    current_burnchain_block_height: burnTip,
    prepare_phase_block_length: 5,
    reward_phase_block_length: REWARD_CYCLE - 5,
    reward_slots: 30,
    rejection_fraction: null,
    total_liquid_supply_ustx: 60005738842905570,
    current_cycle: { id: cycle, min_threshold_ustx: 1875180000000000, stacked_ustx: 0, is_pox_active: false },
    next_cycle: {
      id: cycle + 1,
      min_threshold_ustx: 1875180000000000,
      min_increment_ustx: 7500717355363,
      stacked_ustx: 0,
      prepare_phase_start_block_height: cycleStart + REWARD_CYCLE - 5,
      blocks_until_prepare_phase: cycleStart + REWARD_CYCLE - 5 - burnTip,
      reward_phase_start_block_height: cycleStart + REWARD_CYCLE,
      blocks_until_reward_phase: cycleStart + REWARD_CYCLE - burnTip,
      ustx_until_pox_rejection: null,
    },
    reward_cycle_id: cycle,
    reward_cycle_length: REWARD_CYCLE,
  };
}

function burnBlocksJson(s: Snapshot): Array<Record<string, unknown>> {
  const byBurn = new Map<number, Block[]>();
  for (const b of s.blocks) byBurn.set(b.burnHeight, [...(byBurn.get(b.burnHeight) ?? []), b]);
  return [...byBurn.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([height, blocks]) => {
      const first = blocks[0] as Block;
      return {
        burn_block_time: first.burnTime,
        burn_block_time_iso: new Date(first.burnTime * 1000).toISOString(),
        burn_block_hash: first.burnHash,
        burn_block_height: height,
        stacks_blocks: blocks.map((b) => b.hash),
        avg_block_time: 4,
        total_tx_count: blocks.reduce((n, b) => n + b.txIds.length, 0),
      };
    });
}

/** The v3 TransactionSummary (OpenAPI `/extended/v3/blocks/{h}/transactions`): who sent it, to whom, no events. */
function v3Summary(tx: MinedTx, block: Block): Record<string, unknown> {
  const core = tx.core;
  const payload =
    core.kind === 'token_transfer'
      ? { token_transfer: { recipient: core.recipient, amount: String(core.amount ?? 0n), memo: core.memo ? { hex: core.memo, repr: '' } : null } }
      : core.kind === 'smart_contract'
        ? { smart_contract: { contract_id: core.contractId, clarity_version: 3 } }
        : { contract_call: { contract_id: core.contractId, function_name: core.functionName } };
  return {
    tx_id: core.txId,
    sender: { address: core.sender, nonce: core.nonce },
    sponsor: null,
    fee_rate: String(core.fee),
    block: { height: block.height, hash: block.hash, index_hash: block.indexHash, time: block.time, tx_index: tx.txIndex },
    bitcoin_block: { height: block.burnHeight, time: block.burnTime },
    status: tx.status,
    type: core.kind,
    ...payload,
  };
}

const r = (method: 'GET' | 'POST', pattern: string, kind: Kind, deprecated: boolean, handle: Handler): Route => ({
  method,
  pattern: new RegExp(`^${pattern.replace(/:[a-z_]+/g, '([^/]+)')}/?$`),
  kind,
  deprecated,
  handle,
});

const principalRoute =
  (handle: (s: Snapshot, p: string, q: URLSearchParams) => Reply): Handler =>
  (s, [p = ''], q) =>
    principalOr400(p) ?? handle(s, p, q);
const txRoute =
  (handle: (s: Snapshot, id: string) => Reply): Handler =>
  (s, [id = '']) => {
    if (!TX_ID.test(id)) return validation('params/tx_id must match pattern "^(0x)?[a-fA-F0-9]{64}$"');
    return handle(s, (id.startsWith('0x') ? id : `0x${id}`).toLowerCase());
  };
const withPage = (q: URLSearchParams, max: number, then: (p: { limit: number; offset: number }) => Reply): Reply => {
  const p = paging(q, max);
  return isReply(p) ? p : then(p);
};
/**
 * `/extended/v2/mempool/fees`: per transaction type, percentiles of the pending fees (no: 25th,
 * low: 50th, medium: 75th, high: 95th, as SBA's getMempoolFeePriority; the fake takes the fee,
 * not the fee rate); 0 for a type with nothing pending.
 */
function mempoolFees(s: Snapshot): Record<string, Record<string, number>> {
  const priorities = (fees: bigint[]): Record<string, number> => {
    const sorted = fees.map(Number).sort((a, b) => a - b);
    const at = (q: number) => (sorted.length ? (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number) : 0);
    return { no_priority: at(0.25), low_priority: at(0.5), medium_priority: at(0.75), high_priority: at(0.95) };
  };
  const of = (kind?: string) => priorities(s.mempool.filter((t) => !kind || t.kind === kind).map((t) => t.fee));
  return { all: of(), token_transfer: of('token_transfer'), smart_contract: of('smart_contract'), contract_call: of('contract_call') };
}

/** A principal's pending transactions, newest first (v3 principals mempool/transactions and v1 address mempool). */
const addressMempool = (s: Snapshot, p: string, q: URLSearchParams): Reply =>
  withPage(q, 50, (pg) => {
    const pending = s.mempool.filter((t) => t.sender === p || t.recipient === p).reverse();
    return json(200, page(pending.map(pendingTxJson), pg), principalEtag(s, p, true));
  });

const ROUTES: Route[] = [
  r('GET', '/extended', 'chain_tip', false, (s) => {
    const tip = tipOf(s);
    return json(
      200,
      {
        server_version: 'stacks-blockchain-api v9.0.2 (surface fake)',
        status: 'ready',
        // The burn chain's tip, not the tip block's anchor (upstream-contract §5).
        chain_tip: { block_height: tip.height, block_hash: tip.hash, index_block_hash: tip.indexHash, burn_block_height: s.burnTip.height },
      },
      chainTipEtag(s),
    );
  }),
  // Transactions.
  r('GET', '/extended/v1/tx/mempool', 'mempool', true, (s, _p, q) =>
    withPage(q, 50, (p) => {
      const address = q.get('address');
      if (address !== null && !PRINCIPAL.test(address)) return validation('querystring/address must match pattern');
      const pending = s.mempool.filter((t) => !address || t.sender === address || t.recipient === address).reverse();
      return json(200, page(pending.map(pendingTxJson), p), s.mempoolDigest);
    }),
  ),
  // tx/multiple (one of the 13 routes; a block learner reads events here): keyed by tx id, never 404 (§4.6).
  r('GET', '/extended/v1/tx/multiple', 'mempool', false, (s, _p, q) => {
    const all = q.getAll('tx_id');
    const ids = all.length === 1 ? (all[0] as string).split(',') : all;
    if (ids.length === 0) return validation("querystring must have required property 'tx_id'");
    const bad = ids.findIndex((id) => !TX_ID.test(id));
    if (bad >= 0) return validation(`querystring/tx_id/${bad} must match pattern "^(0x)?[a-fA-F0-9]{64}$"`);
    const eventLimit = q.has('event_limit') ? Number(q.get('event_limit')) : 20;
    if (!Number.isInteger(eventLimit) || eventLimit < 0) return validation('querystring/event_limit must be integer');
    if (eventLimit > 100) return validation('querystring/event_limit must be <= 100');
    if (ids.some((id) => !id.startsWith('0x')))
      return json(400, { statusCode: 400, error: 'Bad Request', message: 'Hex string is missing the "0x" prefix' }, s.mempoolDigest);
    const out: Record<string, unknown> = {};
    for (const id of ids) {
      const lower = id.toLowerCase();
      const mined = s.mined.get(lower);
      const pending = mined ? undefined : s.mempool.find((t) => t.txId === lower);
      if (mined) out[lower] = { found: true, result: minedTxJson(s, mined, eventLimit) };
      else if (pending) out[lower] = { found: true, result: pendingTxJson(pending) };
      else out[id] = { found: false, result: { tx_id: id } };
    }
    return json(200, out, s.mempoolDigest);
  }),
  // Fee priorities of the pending transactions (SBA getMempoolFeePriority), the mempool ETag.
  r('GET', '/extended/v2/mempool/fees', 'mempool', false, (s) => json(200, mempoolFees(s), s.mempoolDigest)),
  // The upstream's v3 mempool list carries the chain-tip ETag (src/api/routes/v3/mempool.ts: preHandler
  // handleChainTipCache), though its body moves with the mempool: a 304 to it says nothing of the mempool.
  r('GET', '/extended/v3/mempool/transactions', 'chain_tip', false, (s, _p, q) =>
    withPage(q, 50, (p) => json(200, page([...s.mempool].reverse().map(pendingTxJson), p), chainTipEtag(s))),
  ),
  r('GET', '/extended/v1/tx', 'chain_tip', true, (s, _p, q) =>
    withPage(q, 50, (p) => {
      const { total, ids } = recentMined(s, p.limit, p.offset);
      return json(200, { limit: p.limit, offset: p.offset, total, results: ids.map((id) => txJsonById(s, id)) }, chainTipEtag(s));
    }),
  ),
  r(
    'GET',
    '/extended/v1/tx/:id/raw',
    'transaction',
    true,
    txRoute((s, id) => {
      const core = s.mined.get(id)?.core ?? s.mempool.find((t) => t.txId === id);
      return core ? json(200, { raw_tx: core.raw }, txEtag(s, id)) : error(404, 'could not find transaction by ID');
    }),
  ),
  r(
    'GET',
    '/extended/v1/tx/:id',
    'transaction',
    true,
    txRoute((s, id) => {
      const body = txJsonById(s, id);
      return body ? json(200, body, txEtag(s, id)) : error(404, 'could not find transaction by ID');
    }),
  ),
  r(
    'GET',
    '/extended/v3/transactions/:id',
    'transaction',
    false,
    txRoute((s, id) => {
      const body = txJsonById(s, id);
      return body ? json(200, body, txEtag(s, id)) : error(404, 'could not find transaction by ID');
    }),
  ),
  // Blocks and burn blocks.
  r('GET', '/extended/v2/blocks', 'chain_tip', false, (s, _p, q) =>
    withPage(q, 30, (p) => json(200, page([...s.blocks].reverse().map(blockJson), p), chainTipEtag(s))),
  ),
  r('GET', '/extended/v2/blocks/average-times', 'chain_tip', false, (s) => {
    const recent = s.blocks.slice(-30);
    const first = recent[0] as Block;
    const last = tipOf(s);
    const avg = recent.length > 1 ? Math.round(((last.time - first.time) / (recent.length - 1)) * 100) / 100 : 0;
    return json(200, { last_1h: avg, last_24h: avg, last_7d: avg, last_30d: avg }, chainTipEtag(s));
  }),
  r('GET', '/extended/v2/blocks/:h/transactions', 'block', true, (s, [h = ''], q) => {
    const block = blockParam(s, h);
    if (isReply(block)) return block;
    // As the upstream: the block's transactions without their events (event_count says how many;
    // /extended/v1/tx/:id carries them).
    return withPage(q, 50, (p) =>
      json(
        200,
        page(
          block.txIds.map((id) => minedTxJson(s, s.mined.get(id) as MinedTx, 0)),
          p,
        ),
        `${block.indexHash}:true`,
      ),
    );
  }),
  r('GET', '/extended/v3/blocks/:h/transactions', 'block', false, (s, [h = ''], q) => {
    const block = blockParam(s, h);
    if (isReply(block)) return block;
    return withPage(q, 50, (p) => {
      const results = block.txIds.slice(p.offset, p.offset + p.limit).map((id) => v3Summary(s.mined.get(id) as MinedTx, block));
      const cursor = (i: number) => (i >= 0 && i < block.txIds.length ? `${block.height}:2147483647:${i}` : null);
      return json(
        200,
        {
          total: block.txIds.length,
          limit: p.limit,
          cursor: { next: cursor(p.offset + p.limit), previous: p.offset > 0 ? cursor(Math.max(0, p.offset - p.limit)) : null, current: cursor(p.offset) },
          results,
        },
        `${block.indexHash}:true`,
      );
    });
  }),
  r('GET', '/extended/v2/blocks/:h', 'block', false, (s, [h = '']) => {
    const block = blockParam(s, h);
    if (isReply(block)) return block;
    // A lookup by block_hash (not index hash) answers with no ETag (§3).
    return json(200, blockJson(block), h.toLowerCase().replace(/^(?!0x)/, '0x') === block.hash ? undefined : `${block.indexHash}:true`);
  }),
  r('GET', '/extended/v1/block/by_burn_block_height/:h', 'chain_tip', true, (s, [h = '']) => {
    if (!/^\d+$/.test(h)) return validation('params/burn_block_height must be integer');
    const found = [...s.blocks].reverse().find((b) => b.burnHeight === Number(h));
    return found ? json(200, legacyBlockJson(found), chainTipEtag(s)) : error(404, 'cannot find block by height', chainTipEtag(s));
  }),
  r('GET', '/extended/v2/burn-blocks', 'chain_tip', false, (s, _p, q) => withPage(q, 30, (p) => json(200, page(burnBlocksJson(s), p), chainTipEtag(s)))),
  // Principals.
  r(
    'GET',
    '/extended/v1/address/:p/stx',
    'principal_mempool',
    true,
    principalRoute((s, p) => json(200, stxBalanceJson(s, p), principalEtag(s, p, true))),
  ),
  r(
    'GET',
    '/extended/v1/address/:p/balances',
    'principal_mempool',
    true,
    principalRoute((s, p) => {
      const fungible = Object.fromEntries(ftBalances(s, p).map((b) => [b.token, { balance: b.balance, total_sent: '0', total_received: b.balance }]));
      return json(200, { stx: stxBalanceJson(s, p), fungible_tokens: fungible, non_fungible_tokens: nftCounts(s, p) }, principalEtag(s, p, true));
    }),
  ),
  r(
    'GET',
    '/extended/v1/address/:p/nonces',
    'principal_mempool',
    true,
    principalRoute((s, p) => json(200, noncesJson(s, p), principalEtag(s, p, true))),
  ),
  r(
    'GET',
    '/extended/v3/principals/:p/nonces',
    'principal_mempool',
    false,
    principalRoute((s, p) => json(200, noncesJson(s, p), principalEtag(s, p, true))),
  ),
  r(
    'GET',
    '/extended/v3/principals/:p/mempool/transactions',
    'principal_mempool',
    false,
    principalRoute((s, p, q) => addressMempool(s, p, q)),
  ),
  // The v1 form (deprecated, read-surface §1.4: principal_mempool): the same page of pending transactions.
  r(
    'GET',
    '/extended/v1/address/:p/mempool',
    'principal_mempool',
    true,
    principalRoute((s, p, q) => addressMempool(s, p, q)),
  ),
  r(
    'GET',
    '/extended/v1/address/:p/transactions',
    'principal',
    true,
    principalRoute((s, p, q) =>
      withPage(q, 50, (pg) => {
        const txs = principalMined(s, p);
        return json(
          200,
          { limit: pg.limit, offset: pg.offset, total: txs.length, results: txs.slice(pg.offset, pg.offset + pg.limit).map((t) => minedTxJson(s, t)) },
          principalEtag(s, p, false),
        );
      }),
    ),
  ),
  r(
    'GET',
    '/extended/v1/address/:p/transactions_with_transfers',
    'principal',
    true,
    principalRoute((s, p, q) => withPage(q, 50, (pg) => addressTransfers(s, p, pg.limit, pg.offset, false))),
  ),
  r(
    'GET',
    '/extended/v2/addresses/:p/transactions',
    'principal',
    true,
    principalRoute((s, p, q) => withPage(q, 50, (pg) => addressTransfers(s, p, pg.limit, pg.offset, true))),
  ),
  r(
    'GET',
    '/extended/v3/principals/:p/transactions',
    'principal',
    false,
    principalRoute((s, p, q) => withPage(q, 50, (pg) => addressTransfers(s, p, pg.limit, pg.offset, true))),
  ),
  r(
    'GET',
    '/extended/v2/addresses/:p/balances/stx',
    'principal',
    false,
    principalRoute((s, p, q) => {
      const withMempool = q.get('include_mempool') === 'true';
      const b = stxBalanceJson(s, p);
      const body = withMempool
        ? {
            balance: b.balance,
            estimated_balance: b.estimated_balance,
            pending_balance_inbound: b.pending_balance_inbound,
            pending_balance_outbound: b.pending_balance_outbound,
            total_sent: b.total_sent,
            total_received: b.total_received,
            total_fees_sent: b.total_fees_sent,
            total_miner_rewards_received: '0',
            lock_tx_id: '',
            locked: '0',
            lock_height: 0,
            burnchain_lock_height: 0,
            burnchain_unlock_height: 0,
          }
        : {
            balance: b.balance,
            total_sent: b.total_sent,
            total_received: b.total_received,
            total_fees_sent: b.total_fees_sent,
            total_miner_rewards_received: '0',
            lock_tx_id: '',
            locked: '0',
            lock_height: 0,
            burnchain_lock_height: 0,
            burnchain_unlock_height: 0,
          };
      return json(200, body, principalEtag(s, p, withMempool));
    }),
  ),
  r(
    'GET',
    '/extended/v3/principals/:p/balances/stx',
    'principal_mempool',
    false,
    principalRoute((s, p) => json(200, stxBalanceJson(s, p), principalEtag(s, p, true))),
  ),
  r(
    'GET',
    '/extended/v2/addresses/:p/balances/ft',
    'principal',
    true,
    principalRoute((s, p, q) => withPage(q, 100, (pg) => json(200, page(ftBalances(s, p), pg), principalEtag(s, p, false)))),
  ),
  r('GET', '/extended/v1/tokens/nft/holdings', 'chain_tip', true, (s, _p, q) => {
    const p = q.get('principal') ?? '';
    if (!PRINCIPAL.test(p)) return validation("querystring must have required property 'principal'");
    return withPage(q, 200, (pg) => {
      const holdings = nftHoldings(s, p).map((h) => {
        // The upstream's nft_custody row: the block and transaction of the event that gave the principal custody.
        const custody = custodyTx(s, p, h.asset, `u${h.id}`);
        return {
          asset_identifier: h.asset,
          value: { hex: `0x01${h.id.toString(16).padStart(32, '0')}`, repr: `u${h.id}` },
          block_height: custody.height,
          tx_id: custody.core.txId,
        };
      });
      return json(200, page(holdings, pg), chainTipEtag(s));
    });
  }),
  // BNS.
  r(
    'GET',
    '/v1/addresses/stacks/:p',
    'chain_tip',
    false,
    principalRoute((s, p) => json(200, { names: [...s.names].filter(([, owner]) => owner === p).map(([name]) => name) }, chainTipEtag(s))),
  ),
  r('GET', '/v1/names/:n', 'chain_tip', false, (s, [n = '']) => {
    const owner = s.names.get(n);
    if (!owner) return json(404, { error: `cannot find name ${n}` }, chainTipEtag(s));
    return json(
      200,
      {
        address: owner,
        blockchain: 'stacks',
        expire_block: 0,
        last_txid: `0x${sha256(`name:${n}`)}`,
        resolver: '',
        status: 'name-register',
        zonefile: '',
        zonefile_hash: '',
      },
      chainTipEtag(s),
    );
  }),
  // Info, pox, contracts status.
  r('GET', '/extended/v1/info/network_block_times', 'chain_tip', false, (s) =>
    json(200, { testnet: { target_block_time: 120 }, mainnet: { target_block_time: 600 } }, chainTipEtag(s)),
  ),
  r('GET', '/extended/v2/pox/cycles', 'chain_tip', false, (s, _p, q) =>
    withPage(q, 60, (pg) => {
      const tip = tipOf(s);
      const current = Math.floor((s.burnTip.height - s.firstBurnHeight) / REWARD_CYCLE);
      const cycles = Array.from({ length: current + 1 }, (_, i) => current - i).map((c) => ({
        block_height: 1,
        index_block_hash: tip.indexHash,
        cycle_number: c,
        total_weight: 0,
        total_stacked_amount: '0',
        total_signers: 0,
      }));
      return json(200, page(cycles, pg), chainTipEtag(s));
    }),
  ),
  // A contract's record (the upstream's get_contract_by_id): its deploy transaction and code, under the chain_tip ETag.
  r('GET', '/extended/v1/contract/:id', 'chain_tip', false, (s, [id = '']) => {
    const [address = '', name = ''] = id.split('.');
    const contract = contractOf(s, address, name);
    const library = contract ? undefined : libraryOf(s, address, name);
    const deploy = principalMined(s, id).find((t) => t.core.kind === 'smart_contract' && t.core.contractId === id);
    if ((contract === undefined && library === undefined) || !deploy) return error(404, `cannot find contract by ID ${id}`, chainTipEtag(s));
    return json(
      200,
      {
        tx_id: deploy.core.txId,
        canonical: true,
        contract_id: id,
        block_height: deploy.height,
        clarity_version: 3,
        source_code: contract ? SOURCES[contract] : librarySource(library as number),
        abi: JSON.stringify(contract ? INTERFACES[contract] : libraryInterface()),
      },
      chainTipEtag(s),
    );
  }),
  r('GET', '/extended/v2/smart-contracts/status', 'chain_tip', false, (s, _p, q) => {
    const ids = q.getAll('contract_id').flatMap((v) => v.split(','));
    const statuses = Object.fromEntries(
      ids.map((id) => {
        const [address = '', name = ''] = id.split('.');
        const found = contractOf(s, address, name) ? principalMined(s, id).at(-1) : undefined;
        return [
          id,
          found ? { found: true, result: { status: 'success', tx_id: found.core.txId, contract_id: id, block_height: found.height } } : { found: false },
        ];
      }),
    );
    return json(200, statuses, chainTipEtag(s));
  }),
  // Node RPC (/v2): no ETag, no-store.
  r('GET', '/v2/info', 'none', false, (s) => json(200, v2Info(s))),
  r('GET', '/v2/pox', 'none', false, (s) => json(200, v2Pox(s))),
  r('GET', '/v2/accounts/:p', 'none', false, (s, [p = ''], q) => {
    if (!PRINCIPAL.test(p)) return text(400, 'Invalid principal');
    const account = s.accounts.get(p);
    const u128 = (n: bigint) => `0x${n.toString(16).padStart(32, '0')}`;
    const body = { balance: u128(account?.balance ?? 0n), locked: u128(0n), unlock_height: 0, nonce: account?.nonce ?? 0 };
    // stacks-core getaccount.rs and httpcore.rs get_with_proof: a proof when `proof` is absent or
    // `1`; a MARF proof is against the tip's state root, so it is new at every block; an account
    // the state does not hold gets "" for each.
    if ((q.get('proof') ?? '1') !== '1') return json(200, body);
    const proof = (what: string) => (account ? `0x${sha256(`marf:${tipOf(s).indexHash}:${p}:${what}`)}` : '');
    return json(200, { ...body, balance_proof: proof('balance'), nonce_proof: proof('nonce') });
  }),
  r('GET', '/v2/fees/transfer', 'none', false, () => json(200, 1)),
  r('POST', '/v2/fees/transaction', 'none', false, (s, _p, _q, req) => feeEstimate(s, req)),
  r('GET', '/v2/contracts/interface/:a/:n', 'none', false, (s, [a = '', n = '']) => {
    const contract = contractOf(s, a, n);
    if (!contract && libraryOf(s, a, n) !== undefined) return json(200, libraryInterface());
    return contract && principalMined(s, `${a}.${n}`).length ? json(200, INTERFACES[contract]) : text(404, 'No contract interface data found');
  }),
  r('GET', '/v2/contracts/source/:a/:n', 'none', false, (s, [a = '', n = '']) => {
    const contract = contractOf(s, a, n);
    const library = contract ? undefined : libraryOf(s, a, n);
    if (library !== undefined) return json(200, { source: librarySource(library), publish_height: principalMined(s, `${a}.${n}`).at(-1)?.height });
    const deployed = contract ? principalMined(s, `${a}.${n}`).at(-1) : undefined;
    return contract && deployed ? json(200, { source: SOURCES[contract], publish_height: deployed.height }) : text(404, 'No contract source data found');
  }),
  r('POST', '/v2/contracts/call-read/:a/:n/:fn', 'none', false, callRead),
  r('POST', '/v2/map_entry/:a/:n/:map', 'none', false, mapEntryReply),
  r('GET', '/v2/data_var/:a/:n/:v', 'none', false, (s, [a = '', n = '', v = ''], q) => {
    const contract = contractOf(s, a, n);
    const value = contract ? dataVar(contract, stateAt(s, q), v) : undefined;
    return value ? json(200, { data: cvHex(value) }) : text(404, 'Data var not found');
  }),
];

/** The latest mined transaction whose NFT event gave `p` the token `repr` of `asset` (every holding has one). */
function custodyTx(s: Snapshot, p: string, asset: string, repr: string): MinedTx {
  for (const tx of principalMined(s, p)) {
    const gave = tx.events.some(
      (e) =>
        e.event_type === 'non_fungible_token_asset' &&
        e.asset.asset_id === asset &&
        e.asset.recipient === p &&
        (e.asset.value as { repr?: string })?.repr === repr,
    );
    if (gave) return tx;
  }
  throw new Error(`no custody event for ${asset} ${repr} of ${p}`);
}

export const BROADCAST_PATH = '/v2/transactions';

/** The route a method and path reach, with its decoded parameters (throws on a broken %-encoding). */
export function routeOf(method: string, path: string): { route: Route; params: string[] } | undefined {
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (match && (route.method === method || (route.method === 'GET' && method === 'HEAD'))) return { route, params: match.slice(1).map(decodeURIComponent) };
  }
  return undefined;
}

/** The answer to one read at one snapshot. */
export function answer(s: Snapshot, req: SurfaceRequest, options: AnswerOptions = {}): Reply {
  let found: ReturnType<typeof routeOf>;
  try {
    found = routeOf(req.method, req.path);
  } catch {
    return error(400, `Bad path: ${req.path.slice(0, 200)}`); // a broken %-encoding
  }
  if (!found) return error(404, `Route ${req.method}:${req.path} not found`);
  if (found.route.deprecated && options.deprecatedGone) return { ...json(410, GONE), deprecated: true };
  let reply: Reply;
  try {
    reply = found.route.handle(s, found.params, new URLSearchParams(req.query), req);
  } catch (e) {
    reply = error(400, `bad request: ${(e as Error).message}`);
  }
  return found.route.deprecated ? { ...reply, deprecated: true } : reply;
}
