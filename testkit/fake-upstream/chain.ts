/**
 * The chain model: canonical and orphaned blocks, transactions and the mempool clock, starting
 * from the recorded chain. Tests move it (new blocks, reorgs, pending and mined txs) and the
 * routes read it, so answers and ETags change as the real upstream's would.
 */
import { minedTokenTransfer, placement } from './bodies.js';
import type { ChainBlock, ChainTx, NakamotoBlock, TxBody } from './model.js';
import { assertCount, HASH_HEX, isoTime, parseEpochMicros, sha256Hex, withHexPrefix } from './primitives.js';
import { recordedChain, recordedMempoolEtag } from './recorded-chain.js';

/** DbTxStatus values: the transaction ETag hashes the number, not the name (§3). */
const TX_STATUS_CODES: Record<string, number> = {
  pending: 0,
  success: 1,
  abort_by_response: -1,
  abort_by_post_condition: -2,
};
/** Spacing of synthesized blocks; the recorded ones are 0 to 25 s apart. */
const BLOCK_INTERVAL_S = 5;
/** Each mempool change moves `mempool_updated_at` on by 1 s: deterministic and always increasing. */
const MEMPOOL_TICK_MICROS = 1_000_000;

export type PrincipalEtags = 'every-block' | 'exact';

/** What the chain tells its listeners (the pushing channels): a new canonical block, a tx entering the mempool or mined. */
export type ChainEvent = { kind: 'block'; block: ChainBlock } | { kind: 'mempool'; tx: TxBody } | { kind: 'mined'; tx: TxBody };

export class FakeChain {
  private readonly canonical: ChainBlock[];
  private readonly orphaned: ChainBlock[] = [];
  private readonly txs: Map<string, ChainTx>;
  private readonly pendingTemplate: TxBody;
  private readonly initialTip: string;
  private readonly initialMempool: string;
  private mempoolMicros: number;
  private burnHeight: number;
  private seq = 0;
  /** How far ahead of the real tip GET /extended claims to be (a node with a wrong view). */
  private tipJump = 0;
  /**
   * `exact`: a principal's ETags move only when a transaction involving it is mined or enters the
   * mempool (and on every reorg), as the upstream's do; `every-block` (the default): also on
   * every new tip, more often than the upstream (see principalEtag).
   */
  private readonly principalEtags: PrincipalEtags;
  /** Since the start, per principal: new txs involving it that were mined and that entered the mempool. */
  private readonly activity = new Map<string, { mined: number; pending: number }>();
  private reorgs = 0;
  private readonly listeners: ((event: ChainEvent) => void)[] = [];

  constructor(principalEtags: PrincipalEtags = 'every-block') {
    this.principalEtags = principalEtags;
    const { blocks, txs } = recordedChain();
    this.canonical = blocks;
    this.txs = txs;
    this.pendingTemplate = this.recordedPendingTx();
    this.initialTip = this.tipBlock().index_block_hash;
    this.initialMempool = recordedMempoolEtag();
    this.mempoolMicros = parseEpochMicros(this.initialMempool);
    this.burnHeight = this.tipBlock().burn_block_height;
  }

  /** Called with every new canonical block and mempool change, after the chain has it (as the upstream pushes after its write). */
  onEvent(listener: (event: ChainEvent) => void): void {
    this.listeners.push(listener);
  }

  tipBlock(): NakamotoBlock {
    const tip = this.canonical.at(-1);
    if (!tip) throw new Error('the chain has no blocks');
    return tip.block;
  }

  /** The tip GET /extended reports: the real one, or a made-up one `tipJump` blocks (and burn blocks) ahead. */
  reportedTip(): Pick<NakamotoBlock, 'height' | 'hash' | 'index_block_hash' | 'burn_block_height'> {
    const tip = this.tipBlock();
    if (this.tipJump === 0) return tip;
    const height = tip.height + this.tipJump;
    return {
      height,
      hash: `0x${sha256Hex(`fake-upstream:jumped-block:${height}`)}`,
      index_block_hash: `0x${sha256Hex(`fake-upstream:jumped-index-block:${height}`)}`,
      burn_block_height: tip.burn_block_height + this.tipJump,
    };
  }

  jumpTip(blocks: number): void {
    assertCount(blocks, 0, 'jumpTip(blocks)');
    this.tipJump = blocks;
  }

  blockAtHeight(height: number): NakamotoBlock | undefined {
    return this.canonical[height - 1]?.block;
  }

  /** A canonical block by block_hash or index_block_hash (lowercase 0x hex). */
  blockByHash(hash: string): NakamotoBlock | undefined {
    return this.canonical.find(({ block }) => block.hash === hash || block.index_block_hash === hash)?.block;
  }

  /**
   * `ORDER BY canonical DESC, block_height DESC LIMIT 1` (§4.12): an orphan only when no canonical
   * block is left at that burn height.
   */
  highestAtBurnHeight(burnHeight: number): ChainBlock | undefined {
    const byRank = (a: ChainBlock, b: ChainBlock) => Number(b.block.canonical) - Number(a.block.canonical) || b.block.height - a.block.height;
    return [...this.canonical, ...this.orphaned].filter(({ block }) => block.burn_block_height === burnHeight).sort(byRank)[0];
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

  /** The transactions in the mempool, oldest first. */
  pendingTxs(): TxBody[] {
    return [...this.txs.values()].filter((tx) => tx.blockIndexHash === undefined).map((tx) => tx.body);
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
  principalEtag(recorded: string, withMempool: boolean, principal: string): string {
    if (this.principalEtags === 'exact') {
      const { mined, pending } = this.activity.get(principal) ?? { mined: 0, pending: 0 };
      const now = [mined, this.reorgs, ...(withMempool ? [pending] : [])];
      return now.every((n) => n === 0) ? recorded : sha256Hex([recorded, ...now].join(':'));
    }
    const now = [this.tipBlock().index_block_hash, ...(withMempool ? [this.mempoolEtag()] : [])];
    const initial = [this.initialTip, ...(withMempool ? [this.initialMempool] : [])];
    return now.join() === initial.join() ? recorded : sha256Hex([recorded, ...now].join(':'));
  }

  /** The principals a new transaction involves (sender and token-transfer recipient). */
  private touch(body: TxBody, what: 'mined' | 'pending'): void {
    const recipient = (body.token_transfer as { recipient_address?: unknown } | undefined)?.recipient_address;
    for (const principal of new Set([body.sender_address, recipient])) {
      if (typeof principal !== 'string') continue;
      const counts = this.activity.get(principal) ?? { mined: 0, pending: 0 };
      counts[what] += 1;
      this.activity.set(principal, counts);
    }
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
    this.reorgs += 1;
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
    this.touch(body, 'pending');
    this.bumpMempool();
    this.emit({ kind: 'mempool', tx: body });
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
    const appended = { block, txIds };
    this.canonical.push(appended);
    for (const id of txIds) this.mine(id, block, parent);
    this.emit({ kind: 'block', block: appended });
    for (const id of txIds) {
      const tx = this.findTx(id);
      if (tx) this.emit({ kind: 'mined', tx: tx.body });
    }
  }

  private emit(event: ChainEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private mine(txId: string, block: NakamotoBlock, parent: NakamotoBlock): void {
    const tx = this.findTx(txId);
    if (!tx) throw new Error(`unknown tx ${txId}`);
    tx.body =
      tx.blockIndexHash === undefined
        ? minedTokenTransfer(tx.body, block, parent)
        : Object.assign(tx.body, placement(block, parent), { parent_block_hash: block.parent_block_hash });
    tx.blockIndexHash = block.index_block_hash;
    this.touch(tx.body, 'mined');
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
