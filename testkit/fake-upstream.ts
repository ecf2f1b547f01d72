/**
 * A fake Stacks Blockchain API for integration tests: a real node:http server on 127.0.0.1 that
 * replays the recorded regtest answers (see fixtures.ts) byte for byte and models the chain tip,
 * blocks, transactions and mempool, so that tests can simulate time (new blocks, reorgs, mempool
 * changes) and faults (delays, error statuses, resets, hangs, garbage).
 *
 * Section numbers (§) refer to shared/spec/upstream-contract.md.
 */
import { createHash } from 'node:crypto';
import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import {
  RECORDED,
  findRecording,
  recordedJson,
  recordingsForPath,
  recordingsMatching,
  splitUrl,
} from './fixtures.js';
import type { Recording } from './fixtures.js';

export { RECORDED } from './fixtures.js';

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

export interface FakeUpstreamOptions {
  /** 0 or absent: a random free port. */
  port?: number;
}

export interface RecordedRequest {
  /** The HTTP method, or `UPGRADE` for a WebSocket upgrade. */
  method: string;
  /** Path and raw query, as received. */
  url: string;
  /** `url` without its query. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

/** How an injected failure answers: a status (with an optional body), or a transport-level fault. */
export type FailureMode = { status: number; body?: string } | 'reset' | 'hang' | 'garbage';

export interface FakeUpstream {
  url: string;
  port: number;
  /** Every request received, in order (HTTP and WebSocket upgrades, failed ones included). */
  requests: RecordedRequest[];
  /** A string matches the path (no query) or the whole url; a RegExp is tested on the url. */
  count(match?: string | RegExp | ((r: RecordedRequest) => boolean)): number;
  resetCounts(): void;
  tip(): { height: number; index_block_hash: string; block_hash: string; burn_block_height: number };
  /** Appends `blocks` (default 1) empty canonical blocks, each one burn block higher. */
  advanceTip(blocks?: number): void;
  /** Orphans the last `depth` blocks and mines `depth + 1` new ones from the fork point. */
  reorg(depth: number): void;
  /** Adds a pending token transfer (a copy of the recorded pending tx); returns its id. */
  addPendingTx(txId?: string): string;
  /** Mines a pending tx into a new block on top of the tip. */
  confirmTx(txId: string): void;
  /** Delays every answer, or those whose url matches; 0 switches delays off. */
  setDelay(ms: number, match?: RegExp): void;
  /** The next `n` requests (whose url matches) fail in the given way. */
  failNext(n: number, how: FailureMode, match?: RegExp): void;
  /** Every request (whose url matches) fails in the given way until called with `null`. */
  setFailing(how: FailureMode | null, match?: RegExp): void;
  /** Moves `mempool_updated_at` (the mempool ETag) without any other change. */
  setMempoolChanged(): void;
  /** Closes the server, its sockets and WebSockets, and drops delayed and hanging requests. */
  close(): Promise<void>;
}

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const fake = new FakeUpstreamServer();
  await fake.listen(opts.port ?? 0);
  return fake;
}

// ---------------------------------------------------------------------------------------------
// Upstream constants
// ---------------------------------------------------------------------------------------------

const API_VERSION = 'v8.13.6 (fake)';
const DEPRECATION_WARNING =
  '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';
const JSON_TYPE = 'application/json; charset=utf-8';
const MUST_REVALIDATE = 'public, no-cache, must-revalidate';
const HASH_HEX = /^(0x)?[a-fA-F0-9]{64}$/;
const HASH_PATTERN_ERROR = 'must match pattern "^(0x)?[a-fA-F0-9]{64}$"';
const BLOCK_PARAM_ERROR =
  'params/height_or_hash must be equal to constant, params/height_or_hash must match pattern "^(0x)?[a-fA-F0-9]{64}$", params/height_or_hash must be integer, params/height_or_hash must match a schema in anyOf';
/** DbTxStatus values: the transaction ETag hashes the number, not the name (§3). */
const TX_STATUS_CODES: Record<string, number> = {
  pending: 0,
  success: 1,
  abort_by_response: -1,
  abort_by_post_condition: -2,
};
/** Paging defaults that apply when `limit` is absent or 0 (§2, `getPagingQueryLimit`). */
const DEFAULT_LIMIT = 20;
/** Query parameters that name a resource (tx/events); the others only page, filter or are ignored. */
const RESOURCE_PARAMS = new Set(['tx_id', 'address']);
/** Spacing of synthesized blocks; the recorded ones are 0 to 25 s apart. */
const BLOCK_INTERVAL_S = 5;
/** Each mempool change moves `mempool_updated_at` on by 1 s: deterministic and always increasing. */
const MEMPOOL_TICK_MICROS = 1_000_000;
/** What 'garbage' answers: declared JSON, but cut short. */
const GARBAGE_BODY = '{"limit":20,"offset":0,"results":[{"tx_id":"0x';
/** Upgrade paths of the upstream's JSON-RPC WebSocket and Socket.IO servers (§6). */
const WS_PATH_PREFIXES = ['/extended/v1/ws', '/socket.io'];

// ---------------------------------------------------------------------------------------------
// Chain model
// ---------------------------------------------------------------------------------------------

/** The `/extended/v2/blocks` body; key order is the upstream's, since bodies are JSON.stringify'd. */
interface NakamotoBlock {
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

interface ChainBlock {
  block: NakamotoBlock;
  /** In the legacy `txs` order: tx_index descending. */
  txIds: string[];
}

/** A `/extended/v1/tx/<id>` body in the upstream's key order. */
type TxBody = Record<string, unknown>;

interface ChainTx {
  body: TxBody;
  /** The block that mined it; undefined while it is pending. */
  blockIndexHash?: string;
}

class FakeChain {
  private readonly canonical: ChainBlock[];
  private readonly orphaned: ChainBlock[] = [];
  private readonly txs: Map<string, ChainTx>;
  private readonly pendingTemplate: TxBody;
  private readonly initialTip: string;
  private readonly initialMempool: string;
  private mempoolMicros: number;
  private burnHeight: number;
  private seq = 0;

  constructor() {
    const { blocks, txs } = recordedChain();
    this.canonical = blocks;
    this.txs = txs;
    this.pendingTemplate = this.recordedPendingTx();
    this.initialTip = this.tipBlock().index_block_hash;
    this.initialMempool = recordedMempoolEtag();
    this.mempoolMicros = parseEpochMicros(this.initialMempool);
    this.burnHeight = this.tipBlock().burn_block_height;
  }

  tipBlock(): NakamotoBlock {
    const tip = this.canonical.at(-1);
    if (!tip) throw new Error('the chain has no blocks');
    return tip.block;
  }

  blockAtHeight(height: number): NakamotoBlock | undefined {
    return this.canonical[height - 1]?.block;
  }

  /** A canonical block by block_hash or index_block_hash (lowercase 0x hex). */
  blockByHash(hash: string): NakamotoBlock | undefined {
    return this.canonical.find(({ block }) => block.hash === hash || block.index_block_hash === hash)
      ?.block;
  }

  /**
   * `ORDER BY canonical DESC, block_height DESC LIMIT 1` (§4.12): an orphan only when no canonical
   * block is left at that burn height.
   */
  highestAtBurnHeight(burnHeight: number): ChainBlock | undefined {
    const byRank = (a: ChainBlock, b: ChainBlock) =>
      Number(b.block.canonical) - Number(a.block.canonical) || b.block.height - a.block.height;
    return [...this.canonical, ...this.orphaned]
      .filter(({ block }) => block.burn_block_height === burnHeight)
      .sort(byRank)[0];
  }

  findTx(txId: string): ChainTx | undefined {
    return this.txs.get(withHexPrefix(txId).toLowerCase());
  }

  /** sha256(`<tx_id>:<index_block_hash>:<microblock_hash>:<status>`) (§3); none for unknown txs. */
  txEtag(txId: string): string | undefined {
    const tx = this.findTx(txId);
    if (!tx) return undefined;
    const microblock = tx.blockIndexHash === undefined ? '' : String(tx.body.microblock_hash);
    const status = TX_STATUS_CODES[String(tx.body.tx_status)];
    return sha256Hex(`${String(tx.body.tx_id)}:${tx.blockIndexHash ?? ''}:${microblock}:${status}`);
  }

  mempoolEtag(): string {
    const micros = String(this.mempoolMicros % 1_000_000).padStart(6, '0');
    return `${Math.floor(this.mempoolMicros / 1_000_000)}.${micros}`;
  }

  /**
   * The real principal ETags hash the principal's last tx (and last mempool tx). The fake keeps the
   * recorded value while nothing has happened, so replays stay byte-for-byte, and afterwards derives
   * a new one from every new tip (and mempool change): more changes than upstream, never fewer.
   */
  principalEtag(recorded: string, withMempool: boolean): string {
    const now = [this.tipBlock().index_block_hash, ...(withMempool ? [this.mempoolEtag()] : [])];
    const initial = [this.initialTip, ...(withMempool ? [this.initialMempool] : [])];
    return now.join() === initial.join() ? recorded : sha256Hex([recorded, ...now].join(':'));
  }

  advance(blocks: number): void {
    assertCount(blocks, 0, 'advanceTip(blocks)');
    for (let i = 0; i < blocks; i++) this.appendBlock([]);
  }

  reorg(depth: number): void {
    assertCount(depth, 1, 'reorg(depth)');
    if (depth >= this.canonical.length) throw new RangeError(`reorg(${depth}) is deeper than the chain`);
    const orphans = this.canonical.splice(this.canonical.length - depth);
    for (const orphan of orphans) orphan.block.canonical = false;
    this.orphaned.push(...orphans);
    // A fork usually re-mines the orphaned txs: they move to the new blocks (new block hash, new ETag).
    for (const orphan of orphans) this.appendBlock([...orphan.txIds]);
    this.appendBlock([]);
  }

  addPending(txId?: string): string {
    const id = txId === undefined ? this.newHash('tx') : withHexPrefix(txId).toLowerCase();
    if (!HASH_HEX.test(id)) throw new TypeError(`addPendingTx: ${txId} is not a 32-byte hex tx id`);
    if (this.txs.has(id)) throw new Error(`addPendingTx: ${id} already exists`);
    const receiptTime = Math.floor(Date.now() / 1000);
    const body = {
      ...this.pendingTemplate,
      tx_id: id,
      receipt_time: receiptTime,
      receipt_time_iso: isoTime(receiptTime),
    };
    this.txs.set(id, { body });
    this.bumpMempool();
    return id;
  }

  confirm(txId: string): void {
    const tx = this.findTx(txId);
    if (!tx || tx.blockIndexHash !== undefined) throw new Error(`confirmTx: ${txId} is not pending`);
    this.appendBlock([String(tx.body.tx_id)]);
    // Mining prunes the tx from the mempool, which moves mempool_updated_at (§3).
    this.bumpMempool();
  }

  bumpMempool(): void {
    this.mempoolMicros += MEMPOOL_TICK_MICROS;
  }

  private appendBlock(txIds: string[]): void {
    const parent = this.tipBlock();
    const time = parent.block_time + BLOCK_INTERVAL_S;
    const block: NakamotoBlock = {
      canonical: true,
      height: parent.height + 1,
      hash: this.newHash('block'),
      block_time: time,
      block_time_iso: isoTime(time),
      tenure_height: parent.tenure_height + 1,
      index_block_hash: this.newHash('index-block'),
      parent_block_hash: parent.hash,
      parent_index_block_hash: parent.index_block_hash,
      burn_block_time: time,
      burn_block_time_iso: isoTime(time),
      burn_block_hash: this.newHash('burn-block'),
      burn_block_height: ++this.burnHeight,
      miner_txid: this.newHash('miner-tx'),
      tx_count: txIds.length,
      execution_cost_read_count: 0,
      execution_cost_read_length: 0,
      execution_cost_runtime: 0,
      execution_cost_write_count: 0,
      execution_cost_write_length: 0,
    };
    this.canonical.push({ block, txIds });
    for (const id of txIds) this.mine(id, block, parent);
  }

  private mine(txId: string, block: NakamotoBlock, parent: NakamotoBlock): void {
    const tx = this.findTx(txId);
    if (!tx) throw new Error(`unknown tx ${txId}`);
    tx.body =
      tx.blockIndexHash === undefined
        ? minedTokenTransfer(tx.body, block, parent)
        : Object.assign(tx.body, placement(block, parent), { parent_block_hash: block.parent_block_hash });
    tx.blockIndexHash = block.index_block_hash;
  }

  /** Deterministic per fake instance, unique across blocks, txs and reorgs. */
  private newHash(label: string): string {
    this.seq += 1;
    return `0x${sha256Hex(`fake-upstream:${label}:${this.seq}`)}`;
  }

  private recordedPendingTx(): TxBody {
    const pending = [...this.txs.values()].find((tx) => tx.blockIndexHash === undefined);
    if (!pending) throw new Error('the recordings hold no pending tx');
    return pending.body;
  }
}

/** Blocks 1..tip and their txs, as recorded. */
function recordedChain(): { blocks: ChainBlock[]; txs: Map<string, ChainTx> } {
  const bodies = recordingsMatching(/^\/extended\/v1\/tx\/0x[0-9a-f]{64}$/).map(
    (rec) => JSON.parse(rec.body) as TxBody,
  );
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

function recordedMempoolEtag(): string {
  const etag = findRecording('/extended/v2/mempool/fees')?.headers.etag;
  if (!etag) throw new Error('the recordings hold no mempool ETag');
  return unquote(etag);
}

function recordedBlocks(): NakamotoBlock[] {
  const blocks = recordingsMatching(/^\/extended\/v2\/blocks\/\d+$/)
    .map((rec) => JSON.parse(rec.body) as NakamotoBlock)
    .sort((a, b) => a.height - b.height);
  blocks.forEach((block, i) => {
    if (block.height !== i + 1) throw new Error(`recorded block ${i + 1} is missing`);
  });
  return blocks;
}

/** by_burn_block_height shows only the highest block of each burn block: the exact `txs` lists of those. */
function recordedLegacyTxIds(): Map<string, string[]> {
  return new Map(
    recordingsMatching(/^\/extended\/v1\/block\/by_burn_block_height\/\d+$/).map((rec) => {
      const legacy = JSON.parse(rec.body) as { index_block_hash: string; txs: string[] };
      return [legacy.index_block_hash, legacy.txs];
    }),
  );
}

function minedAt(height: number, bodies: TxBody[]): string[] {
  return bodies
    .filter((body) => body.block_height === height)
    .sort((a, b) => Number(b.tx_index) - Number(a.tx_index))
    .map((body) => String(body.tx_id));
}

/** Where a mined tx sits, in the upstream's key order. */
function placement(block: NakamotoBlock, parent: NakamotoBlock) {
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
function minedTokenTransfer(pending: TxBody, block: NakamotoBlock, parent: NakamotoBlock): TxBody {
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
function legacyBlockJson({ block: b, txIds }: ChainBlock): string {
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
function searchTxs(chain: FakeChain, ids: string[]): string {
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
    ...[...mined, ...pending].map(
      (tx) => `${JSON.stringify(tx.body.tx_id)}:{"found":true,"result":${JSON.stringify(tx.body)}}`,
    ),
    ...missing.map((id) => `${JSON.stringify(id)}:{"found":false,"result":{"tx_id":${JSON.stringify(id)}}}`),
  ];
  return `{${entries.join(',')}}`;
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

interface RequestContext {
  chain: FakeChain;
  method: string;
  url: string;
  /** Without the query and without a trailing slash (`ignoreTrailingSlash`, §1.1). */
  path: string;
  query: string;
  /** The route pattern's captures. */
  params: string[];
}

interface Reply {
  status: number;
  body: string;
  contentType?: string;
  location?: string;
  /** The unquoted ETag the upstream would compute; undefined means none (and `no-store`). */
  etag?: string;
}

interface RouteSpec {
  pattern: RegExp;
  /** "Dep.? yes" in §4: the answers carry the Warning header. */
  deprecated?: boolean;
  /** Answers from the chain model; routes without it replay the recordings. */
  handle?: (ctx: RequestContext) => Reply;
  /** The current ETag of a replayed answer whose recording carried `recorded`. */
  etag?: (ctx: RequestContext, recorded: string) => string | undefined;
  /** The path whose recordings answer for a resource that was never recorded. */
  standIn?: (ctx: RequestContext) => string;
  /** The answer when no recording fits. */
  fallback?: (ctx: RequestContext) => Reply;
}

const tipEtag = ({ chain }: RequestContext) => chain.tipBlock().index_block_hash;
const mempoolEtag = ({ chain }: RequestContext) => chain.mempoolEtag();
const principalEtag = ({ chain }: RequestContext, recorded: string) => chain.principalEtag(recorded, false);
const principalMempoolEtag = ({ chain }: RequestContext, recorded: string) =>
  chain.principalEtag(recorded, true);
/** with_transfers carries the transaction's ETag, keyed by the tx alone (§4.13). */
const transferEtag = ({ chain, params: [, txId = ''] }: RequestContext) => chain.txEtag(txId);
/** An unrecorded principal answers as one without any activity does (200, zeros, no ETag). */
const asInactivePrincipal = ({ path, params: [principal = ''] }: RequestContext) =>
  path.replace(`/${principal}/`, `/${RECORDED.principalWithoutTxs}/`);

/** Static segments first: find-my-way prefers them over parametric ones (§1.1). */
const ROUTES: RouteSpec[] = [
  { pattern: /^\/extended$/, handle: statusReply },
  { pattern: /^\/extended\/v1\/tx\/multiple$/, handle: txMultipleReply },
  { pattern: /^\/extended\/v1\/tx\/mempool\/stats$/, etag: mempoolEtag },
  { pattern: /^\/extended\/v2\/mempool\/fees$/, etag: mempoolEtag },
  {
    pattern: /^\/extended\/v1\/tx\/events$/,
    deprecated: true,
    etag: tipEtag,
    fallback: emptyPage('events'),
  },
  { pattern: /^\/extended\/v1\/tx\/([^/]+)$/, deprecated: true, handle: txReply },
  { pattern: /^\/extended\/v2\/blocks\/([^/]+)$/, handle: blockReply },
  {
    pattern: /^\/extended\/v1\/block\/by_burn_block_height\/([^/]+)$/,
    deprecated: true,
    handle: burnBlockReply,
  },
  {
    pattern: /^\/extended\/v1\/contract\/([^/]+)\/events$/,
    deprecated: true,
    etag: tipEtag,
    fallback: emptyPage('results'),
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/(?:stx|balances)$/,
    deprecated: true,
    etag: principalMempoolEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/transactions$/,
    deprecated: true,
    etag: principalEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v2\/addresses\/([^/]+)\/transactions$/,
    deprecated: true,
    etag: principalEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/([^/]+)\/with_transfers$/,
    deprecated: true,
    etag: transferEtag,
    fallback: unrelatedTransfer,
  },
];

function statusReply({ chain }: RequestContext): Reply {
  const tip = chain.tipBlock();
  const chain_tip = {
    block_height: tip.height,
    block_hash: tip.hash,
    index_block_hash: tip.index_block_hash,
    burn_block_height: tip.burn_block_height,
  };
  // Spreading the recorded body keeps server_version, status and the v8 pox_* fields in place.
  return jsonReply(200, JSON.stringify({ ...recordedJson('/extended'), chain_tip }), tip.index_block_hash);
}

function blockReply({ chain, params: [param = ''] }: RequestContext): Reply {
  if (param === 'latest') return blockFound(chain.tipBlock(), true);
  if (HASH_HEX.test(param)) {
    // preValidation adds a missing 0x; the ETag lookup then matches index_block_hash only (§3).
    const hash = withHexPrefix(param).toLowerCase();
    const block = chain.blockByHash(hash);
    return block ? blockFound(block, block.index_block_hash === hash) : blockNotFound();
  }
  if (/^\d+$/.test(param)) {
    const block = chain.blockAtHeight(Number(param));
    return block ? blockFound(block, true) : blockNotFound();
  }
  // A negative integer passes the schema, then parseBlockParam throws a plain Error (§2).
  if (/^-\d+$/.test(param)) return jsonReply(500, errorBody(500, 'Invalid block height or hash'));
  return validationError(BLOCK_PARAM_ERROR);
}

function blockFound(block: NakamotoBlock, withEtag: boolean): Reply {
  return jsonReply(200, JSON.stringify(block), withEtag ? `${block.index_block_hash}:true` : undefined);
}

function blockNotFound(): Reply {
  return jsonReply(404, errorBody(404, 'Block not found'));
}

function burnBlockReply({ chain, params: [param = ''] }: RequestContext): Reply {
  if (!/^-?\d+$/.test(param)) return validationError('params/burn_block_height must be integer');
  const burnHeight = Number(param);
  if (burnHeight < 0) return validationError('params/burn_block_height must be >= 0');
  const found = chain.highestAtBurnHeight(burnHeight);
  // Both answers carry the chain-tip ETag: the cache preHandler runs before the handler (§3).
  const etag = chain.tipBlock().index_block_hash;
  return found
    ? jsonReply(200, legacyBlockJson(found), etag)
    : jsonReply(404, errorBody(404, 'cannot find block by height'), etag);
}

/** Query params other than the default are ignored: the default body answers them all. */
function txReply({ chain, params: [param = ''], query }: RequestContext): Reply {
  if (!HASH_HEX.test(param)) return validationError(`params/tx_id ${HASH_PATTERN_ERROR}`);
  const id = withHexPrefix(param);
  // The ETag preHandler runs before the redirect, so a 302 carries it too (§4.4).
  const etag = chain.txEtag(id);
  if (id !== param) {
    return { status: 302, body: '', location: `/extended/v1/tx/${id}${query ? `?${query}` : ''}`, etag };
  }
  const tx = chain.findTx(id);
  return tx
    ? jsonReply(200, JSON.stringify(tx.body), etag)
    : jsonReply(404, errorBody(404, 'could not find transaction by ID'));
}

function txMultipleReply({ chain, query }: RequestContext): Reply {
  const ids = requestedTxIds(query);
  if (ids.length === 0) return validationError("querystring must have required property 'tx_id'");
  const invalid = ids.findIndex((id) => !HASH_HEX.test(id));
  if (invalid >= 0) return validationError(`querystring/tx_id/${invalid} ${HASH_PATTERN_ERROR}`);
  const etag = chain.mempoolEtag();
  // validateRequestHexInput runs in the handler, after the ETag was set (§4.6).
  if (ids.some((id) => !id.startsWith('0x'))) {
    return jsonReply(400, errorBody(400, 'Hex string is missing the "0x" prefix'), etag);
  }
  return jsonReply(200, searchTxs(chain, ids), etag);
}

/** Repeated `tx_id` params, or one comma list: preValidation splits only a single value (§4.6). */
function requestedTxIds(query: string): string[] {
  const ids = new URLSearchParams(query).getAll('tx_id');
  const [only] = ids;
  return ids.length === 1 && only !== undefined ? only.split(',') : ids;
}

/** A resource without events answers an empty page, never 404 (§4.8, §4.9). */
function emptyPage(listKey: 'events' | 'results'): (ctx: RequestContext) => Reply {
  return ({ chain, query }) => {
    const params = new URLSearchParams(query);
    const page = {
      limit: Number(params.get('limit')) || DEFAULT_LIMIT,
      offset: Number(params.get('offset')) || 0,
      [listKey]: [],
    };
    return jsonReply(200, JSON.stringify(page), chain.tipBlock().index_block_hash);
  };
}

/** A tx not related to the principal: 404 that still carries the tx's ETag when the tx exists (§3). */
function unrelatedTransfer(ctx: RequestContext): Reply {
  return jsonReply(404, errorBody(404, 'No matching transaction found'), transferEtag(ctx));
}

/** Replays a recording of the request (or of its stand-in), with the ETag recomputed for now. */
function replayReply(ctx: RequestContext, route: RouteSpec): Reply {
  const rec =
    lookupRecording(ctx.path, ctx.query) ??
    (route.standIn ? lookupRecording(route.standIn(ctx), ctx.query) : undefined);
  if (!rec) return route.fallback?.(ctx) ?? routeNotFound(ctx.method, ctx.url);
  const recordedEtag = rec.headers.etag === undefined ? undefined : unquote(rec.headers.etag);
  return {
    status: rec.status,
    body: rec.body,
    contentType: rec.headers['content-type'],
    location: rec.headers.location,
    etag: recordedEtag === undefined ? undefined : route.etag?.(ctx, recordedEtag),
  };
}

function lookupRecording(urlPath: string, query: string): Recording | undefined {
  return findRecording(query ? `${urlPath}?${query}` : urlPath) ?? closestRecording(urlPath, query);
}

/**
 * For an unrecorded query variant: the 200 recording of the same path naming the same resource
 * (same tx_id/address) that shares the most query pairs, then the shortest (the default query).
 */
function closestRecording(urlPath: string, query: string): Recording | undefined {
  const wanted = new Set(query.split('&'));
  const identity = resourceParams(query);
  let best: { rec: Recording; shared: number } | undefined;
  for (const rec of recordingsForPath(urlPath)) {
    const recQuery = splitUrl(rec.path).query;
    if (rec.status !== 200 || resourceParams(recQuery) !== identity) continue;
    const shared = recQuery.split('&').filter((pair) => wanted.has(pair)).length;
    const better =
      !best || shared > best.shared || (shared === best.shared && rec.path.length < best.rec.path.length);
    if (better) best = { rec, shared };
  }
  return best?.rec;
}

function resourceParams(query: string): string {
  return query
    .split('&')
    .filter((pair) => RESOURCE_PARAMS.has(pair.split('=')[0] ?? ''))
    .sort()
    .join('&');
}

/** `/v2/*` is proxied to the stacks-core node upstream (§5): a small, tip-aware stand-in. */
function coreInfoReply({ chain }: RequestContext): Reply {
  const tip = chain.tipBlock();
  const info = {
    peer_version: 4207599116,
    burn_block_height: tip.burn_block_height,
    server_version: 'stacks-node fake',
    network_id: 2147483648,
    parent_network_id: 3669344250,
    stacks_tip_height: tip.height,
    stacks_tip: tip.hash.slice(2),
    is_fully_synced: true,
  };
  return { status: 200, body: JSON.stringify(info), contentType: 'application/json' };
}

function broadcastReply(rawTx: Buffer): Reply {
  return { status: 200, body: JSON.stringify(`0x${sha256Hex(rawTx)}`), contentType: 'application/json' };
}

function routeNotFound(method: string, url: string): Reply {
  // Fastify's default 404 handler, with its own key order.
  const body = { message: `Route ${method}:${url} not found`, error: 'Not Found', statusCode: 404 };
  return jsonReply(404, JSON.stringify(body));
}

function jsonReply(status: number, body: string, etag?: string): Reply {
  return { status, body, contentType: JSON_TYPE, etag };
}

/** Fastify's default error serialization: `{statusCode, error, message}` (§1.3). */
function errorBody(status: number, message: string): string {
  return JSON.stringify({ statusCode: status, error: STATUS_CODES[status] ?? 'Error', message });
}

function validationError(message: string): Reply {
  const body = { statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message };
  return jsonReply(400, JSON.stringify(body));
}

// ---------------------------------------------------------------------------------------------
// Fault injection
// ---------------------------------------------------------------------------------------------

class FaultPlan {
  private delay: { ms: number; match?: RegExp } | undefined;
  private readonly once: { how: FailureMode; match?: RegExp; remaining: number }[] = [];
  private always: { how: FailureMode; match?: RegExp } | undefined;

  setDelay(ms: number, match?: RegExp): void {
    this.delay = ms > 0 ? { ms, match } : undefined;
  }

  failNext(n: number, how: FailureMode, match?: RegExp): void {
    assertCount(n, 0, 'failNext(n)');
    if (n > 0) this.once.push({ how, match, remaining: n });
  }

  setFailing(how: FailureMode | null, match?: RegExp): void {
    this.always = how === null ? undefined : { how, match };
  }

  delayFor(url: string): number {
    return this.delay && matches(this.delay.match, url) ? this.delay.ms : 0;
  }

  /** The failure for this request, if any; uses up one failNext credit. */
  take(url: string): FailureMode | undefined {
    const rule = this.once.find((r) => matches(r.match, url));
    if (rule) {
      rule.remaining -= 1;
      if (rule.remaining === 0) this.once.splice(this.once.indexOf(rule), 1);
      return rule.how;
    }
    return this.always && matches(this.always.match, url) ? this.always.how : undefined;
  }
}

function matches(pattern: RegExp | undefined, url: string): boolean {
  if (!pattern) return true;
  pattern.lastIndex = 0; // a /g or /y pattern would otherwise resume from its previous match
  return pattern.test(url);
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

class FakeUpstreamServer implements FakeUpstream {
  url = '';
  port = 0;
  readonly requests: RecordedRequest[] = [];
  private readonly chain = new FakeChain();
  private readonly faults = new FaultPlan();
  private readonly server = createServer((req, res) => this.onRequest(req, res));
  private readonly wss = new WebSocketServer({ noServer: true });
  /** Every connection, so that close() can end keep-alive, upgraded and hanging ones. */
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor() {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.onUpgrade(req, socket, head),
    );
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  count(match?: string | RegExp | ((r: RecordedRequest) => boolean)): number {
    if (match === undefined) return this.requests.length;
    const test =
      typeof match === 'string'
        ? (r: RecordedRequest) => r.path === match || r.url === match
        : match instanceof RegExp
          ? (r: RecordedRequest) => matches(match, r.url)
          : match;
    return this.requests.filter(test).length;
  }

  resetCounts(): void {
    this.requests.length = 0; // in place: callers may hold the array
  }

  tip() {
    const block = this.chain.tipBlock();
    return {
      height: block.height,
      index_block_hash: block.index_block_hash,
      block_hash: block.hash,
      burn_block_height: block.burn_block_height,
    };
  }

  advanceTip(blocks = 1): void {
    this.chain.advance(blocks);
  }

  reorg(depth: number): void {
    this.chain.reorg(depth);
  }

  addPendingTx(txId?: string): string {
    return this.chain.addPending(txId);
  }

  confirmTx(txId: string): void {
    this.chain.confirm(txId);
  }

  setDelay(ms: number, match?: RegExp): void {
    this.faults.setDelay(ms, match);
  }

  failNext(n: number, how: FailureMode, match?: RegExp): void {
    this.faults.failNext(n, how, match);
  }

  setFailing(how: FailureMode | null, match?: RegExp): void {
    this.faults.setFailing(how, match);
  }

  setMempoolChanged(): void {
    this.chain.bumpMempool();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    this.record(req.method ?? 'GET', url, req.headers);
    const failure = this.faults.take(url);
    this.later(this.faults.delayFor(url), () => {
      if (failure) fail(req, res, failure);
      else this.answer(req, res).catch((error: unknown) => crashed(res, error));
    });
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = req.url ?? '/';
    this.record('UPGRADE', url, req.headers);
    const failure = this.faults.take(url);
    this.later(this.faults.delayFor(url), () => {
      if (failure) refuseUpgrade(socket, failure);
      else if (WS_PATH_PREFIXES.some((prefix) => url.startsWith(prefix))) {
        this.wss.handleUpgrade(req, socket, head, echo);
      } else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
  }

  private record(method: string, url: string, headers: IncomingHttpHeaders): void {
    this.requests.push({ method, url, path: splitUrl(url).path, headers: { ...headers } });
  }

  private later(ms: number, run: () => void): void {
    if (ms <= 0) return run();
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const { path, query } = splitUrl(url);
    const ctx: RequestContext = { chain: this.chain, method, url, path: trimSlash(path), query, params: [] };
    if (method === 'POST' && ctx.path === '/v2/transactions') {
      return send(req, res, broadcastReply(await readBody(req)));
    }
    if (method !== 'GET' && method !== 'HEAD') return send(req, res, routeNotFound(method, url));
    if (ctx.path === '/v2/info') return send(req, res, coreInfoReply(ctx));
    for (const route of ROUTES) {
      const match = route.pattern.exec(ctx.path);
      if (!match) continue;
      const routed = { ...ctx, params: match.slice(1).map((p) => p ?? '') };
      const reply = route.handle ? route.handle(routed) : replayReply(routed, route);
      return send(req, res, reply, route.deprecated);
    }
    send(req, res, routeNotFound(method, url));
  }
}

/** Adds the common headers, and answers 304 when If-None-Match holds the ETag (§3, §1.4). */
function send(req: IncomingMessage, res: ServerResponse, reply: Reply, deprecated = false): void {
  // Validation fails before the global preHandler, which sets X-API-Version and Cache-Control.
  const isValidationError = reply.status === 400 && reply.body.includes('"code":"FST_ERR_VALIDATION"');
  const headers: OutgoingHttpHeaders = {};
  if (!isValidationError) headers['x-api-version'] = API_VERSION;
  if (deprecated) headers.warning = DEPRECATION_WARNING;
  if (reply.etag !== undefined) {
    headers['cache-control'] = MUST_REVALIDATE;
    if (ifNoneMatchHolds(req.headers['if-none-match'], reply.etag)) return write(res, 304, headers);
    headers.etag = `"${reply.etag}"`;
  } else if (!isValidationError) {
    headers['cache-control'] = 'no-store';
  }
  if (reply.contentType) headers['content-type'] = reply.contentType;
  if (reply.location) headers.location = reply.location;
  write(res, reply.status, headers, reply.body);
}

/** `parseIfNoneMatchHeader` (§3): a comma list, `W/` and quotes stripped, `*` not special. */
function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => unquote(tag.trim().replace(/^W\//, '')))
    .includes(etag);
}

function write(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body = ''): void {
  if (status === 304) {
    res.writeHead(304, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) }).end(body);
}

function fail(req: IncomingMessage, res: ServerResponse, how: FailureMode): void {
  if (how === 'hang') return; // close() destroys the socket
  if (how === 'reset') {
    req.socket.destroy();
    return;
  }
  const headers = { 'content-type': JSON_TYPE, 'x-api-version': API_VERSION, 'cache-control': 'no-store' };
  if (how === 'garbage') write(res, 200, headers, GARBAGE_BODY);
  else write(res, how.status, headers, how.body ?? errorBody(how.status, 'Injected failure'));
}

/** A bug in the fake shows up as a 500 that names it, not as a dropped connection. */
function crashed(res: ServerResponse, error: unknown): void {
  if (res.headersSent) res.destroy();
  else write(res, 500, { 'content-type': JSON_TYPE }, errorBody(500, `fake upstream: ${String(error)}`));
}

function refuseUpgrade(socket: Duplex, how: FailureMode): void {
  if (how === 'hang') return;
  if (how === 'reset') {
    socket.destroy();
    return;
  }
  if (how === 'garbage') socket.end(GARBAGE_BODY);
  else socket.end(`HTTP/1.1 ${how.status} ${STATUS_CODES[how.status] ?? ''}\r\nConnection: close\r\n\r\n`);
}

function echo(ws: WebSocket): void {
  // A client that breaks the protocol must not crash the test process with an unhandled 'error'.
  ws.on('error', () => ws.terminate());
  ws.on('message', (data, isBinary) => ws.send(isBinary ? data : `echo:${data.toString()}`));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function unquote(tag: string): string {
  return tag.replace(/^"|"$/g, '');
}

function withHexPrefix(hex: string): string {
  return hex.startsWith('0x') ? hex : `0x${hex}`;
}

function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

function isoTime(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}

/** `1795327171.909223` (Postgres `date_part('epoch', …)::text`) as integer microseconds. */
function parseEpochMicros(epoch: string): number {
  const [seconds = '0', fraction = ''] = epoch.split('.');
  return Number(seconds) * 1_000_000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

function assertCount(n: number, min: number, what: string): void {
  if (!Number.isInteger(n) || n < min) throw new RangeError(`${what} must be an integer >= ${min}`);
}
