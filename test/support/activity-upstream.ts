/**
 * A small upstream for the principal-activity tests (issue 15): a real node:http server that
 * counts what it receives and models just what broadcasts and block learning read, as the
 * upstream answers it:
 *   - the tip (`GET /extended`, chain_tip ETag), blocks by height (`/extended/v2/blocks/:h`), many
 *     Stacks blocks per burn block (Nakamoto), burn blocks, reorgs;
 *   - a block's transactions (`/extended/v2/blocks/:index_block_hash/transactions`, pages) and
 *     their events (`/extended/v1/tx/multiple?tx_id=…&event_limit=…`);
 *   - per principal: `/extended/v1/address/:p/stx` and `/extended/v1/address/:p/nonces`
 *     (principal_mempool ETag: move with its confirmed and pending activity; the nonces' body,
 *     as the upstream's getAddressNonces computes it, only with the transactions it sends),
 *     `/extended/v1/address/:p/transactions` (principal ETag: confirmed activity) and the node's
 *     `/v2/accounts/:p` (no ETag: its confirmed balance and nonce), whose bodies carry the
 *     principal's counters, so a stale answer is visible;
 *   - `/extended/v1/tx/mempool` (also `?address=`: that principal's pending list; the global
 *     mempool ETag either way), as the mempool watcher and wallets read it;
 *   - `POST /v2/transactions`: decodes the transaction (JSON `{tx}` or raw bytes) with
 *     @stacks/transactions and makes it pending for its sender (the sender's pending nonce moves).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { broadcastPrincipals } from '../../src/chain/broadcast-principals.js';

export interface LearnTx {
  tx_id: string;
  tx_type: string;
  sender_address: string;
  token_transfer?: { recipient_address: string };
  contract_call?: { contract_id: string };
  coinbase_payload?: { alt_recipient: string | null };
  /** Events as tx/multiple returns them (their principals are what a block touched through events). */
  events: unknown[];
}

interface Block {
  height: number;
  hash: string;
  indexBlockHash: string;
  burnHeight: number;
  txs: LearnTx[];
}

interface PrincipalState {
  /** Changes of its confirmed and of its pending activity, any role. */
  confirmed: number;
  pending: number;
  /** Transactions it sent, mined and pending: all its nonces move with. */
  sent: number;
  sentPending: number;
}

/** The miner of every block (its tenure changes name it). */
export const MINER = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

export class ActivityUpstream {
  readonly requests: { method: string; url: string }[] = [];
  private server!: Server;
  url = '';
  private readonly blocks: Block[] = [];
  private burnHeight = 100;
  private seq = 0;
  private readonly principals = new Map<string, PrincipalState>();
  /** Pending transactions (newest last), as /extended/v1/tx/mempool lists them. */
  private readonly mempool: {
    tx_id: string;
    tx_status: string;
    tx_type: string;
    sender_address: string;
    sponsored: boolean;
    token_transfer: { recipient_address: string };
  }[] = [];
  /** Paths (regex on the url) answered 500 while set. */
  failing: RegExp | undefined;
  /** Paths answered 404 (the upstream's answer for a block it does not hold) while set. */
  missing: RegExp | undefined;
  /** Paths never answered while set (a hung upstream: the client's deadline ends the request). */
  hanging: RegExp | undefined;
  /** Called with each request's url before it is answered (a test's way to change state between two requests). */
  beforeAnswer: ((url: string) => void) | undefined;
  /** Broadcasts the codec cannot read are accepted too (as a node of a newer epoch might). */
  acceptUndecodable = false;
  /** The body of the last POST /v2/transactions, as received. */
  lastBroadcast: Buffer | undefined;
  /** Every POST /v2/transactions body received in full, in order. */
  readonly broadcasts: Buffer[] = [];
  /** Bytes of POST /v2/transactions bodies received so far, counted as they stream in (ended or not). */
  broadcastBytesSoFar = 0;
  /** Held answers (holdNext): the url they match, and what releases them. */
  private readonly holds: { match: RegExp; arrived: () => void; released: Promise<void> }[] = [];

  /**
   * The next request matching `match` is answered as the upstream stands when it arrives, but
   * that answer is held until `release()`: a fetch sent before something changes upstream.
   */
  holdNext(match: RegExp): { arrived: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const arrivedPromise = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ match, arrived, released });
    return { arrived: arrivedPromise, release };
  }

  constructor() {
    for (let i = 0; i < 3; i++) this.mine([]);
  }

  async listen(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  count(match: RegExp): number {
    return this.requests.filter((r) => match.test(r.url)).length;
  }

  tip(): Block {
    return this.blocks.at(-1) as Block;
  }

  /**
   * Mines a block in the current burn block (a Nakamoto block): its transactions touch their
   * principals. Every block holds the miner's tenure change first, as a real one holds one
   * transaction at least.
   */
  mine(userTxs: LearnTx[]): Block {
    const height = this.blocks.length + 1;
    const txs = [{ tx_id: this.hash('tx'), tx_type: 'tenure_change', sender_address: MINER, events: [] }, ...userTxs];
    const block = { height, hash: this.hash('block'), indexBlockHash: this.hash('index'), burnHeight: this.burnHeight, txs };
    this.blocks.push(block);
    for (const tx of txs) {
      for (const principal of touched(tx)) this.state(principal).confirmed += 1;
      this.state(tx.sender_address).sent += 1;
    }
    return block;
  }

  /** A new burn block, and a first Stacks block in it (a new tenure). */
  newTenure(): Block {
    this.burnHeight += 1;
    return this.mine([]);
  }

  /** Replaces the last block by another one at its height (and one more on top). */
  reorg(): void {
    const orphan = this.blocks.pop() as Block;
    // Its transactions are no longer executed: what they touched and what their senders sent changed.
    for (const tx of orphan.txs) {
      for (const principal of touched(tx)) this.state(principal).confirmed += 1;
      this.state(tx.sender_address).sent += 1;
    }
    this.mine([]);
    this.mine([]);
  }

  /** A transfer from `sender` to `recipient`, with the STX event the upstream lists for it. */
  transfer(sender: string, recipient: string): LearnTx {
    return {
      tx_id: this.hash('tx'),
      tx_type: 'token_transfer',
      sender_address: sender,
      token_transfer: { recipient_address: recipient },
      events: [{ event_index: 0, event_type: 'stx_asset', asset: { asset_event_type: 'transfer', sender, recipient, amount: '1' } }],
    };
  }

  /** A contract call whose only mention of `credited` is an FT event (what the learner must read events for). */
  contractCallCrediting(sender: string, contract: string, credited: string): LearnTx {
    return {
      tx_id: this.hash('tx'),
      tx_type: 'contract_call',
      sender_address: sender,
      contract_call: { contract_id: contract },
      events: [
        {
          event_index: 0,
          event_type: 'fungible_token_asset',
          asset: { asset_event_type: 'transfer', asset_id: `${contract}::tok`, sender: contract, recipient: credited, amount: '5' },
        },
      ],
    };
  }

  /** A transfer enters the mempool without passing through the proxy (another wallet's broadcast). */
  addPending(sender: string, recipient: string): void {
    this.mempool.push({
      tx_id: this.hash('pending'),
      tx_status: 'pending',
      tx_type: 'token_transfer',
      sender_address: sender,
      sponsored: false,
      token_transfer: { recipient_address: recipient },
    });
    this.state(sender).pending += 1;
    this.state(sender).sentPending += 1;
    this.state(recipient).pending += 1;
  }

  private state(principal: string): PrincipalState {
    let state = this.principals.get(principal);
    if (!state) this.principals.set(principal, (state = { confirmed: 0, pending: 0, sent: 0, sentPending: 0 }));
    return state;
  }

  private hash(label: string): string {
    this.seq += 1;
    return `0x${sha(`activity-upstream:${label}:${this.seq}`)}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    this.requests.push({ method: req.method ?? 'GET', url });
    const streaming = req.method === 'POST' && url.startsWith('/v2/transactions');
    const body = await readBody(req, streaming ? (bytes) => (this.broadcastBytesSoFar += bytes) : undefined);
    const [path = '', query = ''] = url.split('?');
    const holding = this.holds.findIndex((h) => h.match.test(url));
    const hold = holding < 0 ? undefined : this.holds.splice(holding, 1)[0];
    const json = (status: number, value: unknown, etag?: string) => {
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
      if (etag) headers.etag = `"${etag}"`;
      const matches = etag !== undefined && req.headers['if-none-match'] === `"${etag}"`;
      const text = matches ? undefined : JSON.stringify(value);
      if (!hold) {
        res.writeHead(matches ? 304 : status, headers);
        res.end(text);
        return;
      }
      hold.arrived();
      void hold.released.then(() => {
        res.writeHead(matches ? 304 : status, headers);
        res.end(text);
      });
    };
    if (this.hanging?.test(url)) return; // close() destroys the socket
    if (this.failing?.test(url)) return json(500, { error: 'failing on purpose' });
    if (this.missing?.test(url)) return json(404, { error: 'not found on purpose' });
    this.beforeAnswer?.(url);
    if (req.method === 'POST' && path === '/v2/transactions') {
      this.lastBroadcast = body;
      this.broadcasts.push(body);
      const principals = broadcastPrincipals(body, req.headers['content-type']);
      if (!principals && this.acceptUndecodable) return json(200, sha(body.toString('hex')));
      if (!principals) return json(400, { error: 'transaction rejected', reason: 'Deserialization' });
      const [sender, recipient = sender] = principals as [string, ...string[]];
      this.state(sender).pending += 1;
      this.state(sender).sentPending += 1;
      const txId = `0x${sha(body.toString('hex'))}`;
      this.mempool.push({
        tx_id: txId,
        tx_status: 'pending',
        tx_type: 'token_transfer',
        sender_address: sender,
        sponsored: false,
        token_transfer: { recipient_address: recipient },
      });
      return json(200, txId);
    }
    const tip = this.tip();
    if (path === '/extended') {
      const chain_tip = { block_height: tip.height, block_hash: tip.hash, index_block_hash: tip.indexBlockHash, burn_block_height: tip.burnHeight };
      return json(200, { server_version: 'activity-upstream', status: 'ready', chain_tip }, tip.indexBlockHash);
    }
    let match = /^\/extended\/v2\/blocks\/([^/]+)\/transactions$/.exec(path);
    if (match) {
      const block = this.blocks.find((b) => b.indexBlockHash === match?.[1]);
      if (!block) return json(404, { error: 'block not found' });
      const params = new URLSearchParams(query);
      const limit = Number(params.get('limit') ?? 20);
      const offset = Number(params.get('offset') ?? 0);
      const results = block.txs.slice(offset, offset + limit).map((tx) => ({
        tx_id: tx.tx_id,
        tx_type: tx.tx_type,
        sender_address: tx.sender_address,
        sponsored: false,
        ...(tx.token_transfer ? { token_transfer: tx.token_transfer } : {}),
        ...(tx.contract_call ? { contract_call: tx.contract_call } : {}),
        ...(tx.coinbase_payload ? { coinbase_payload: tx.coinbase_payload } : {}),
        canonical: true,
        block_height: block.height,
        event_count: tx.events.length,
      }));
      return json(200, { limit, offset, total: block.txs.length, results }, `${block.indexBlockHash}:true`);
    }
    // By height, or by index block hash (the tracker reads the tip block's anchor there).
    match = /^\/extended\/v2\/blocks\/(\d+|0x[0-9a-f]{64})$/.exec(path);
    if (match) {
      const key = match[1] as string;
      const block = key.startsWith('0x') ? this.blocks.find((b) => b.indexBlockHash === key) : this.blocks[Number(key) - 1];
      if (!block) return json(404, { error: 'block not found' });
      return json(200, {
        canonical: true,
        height: block.height,
        hash: block.hash,
        index_block_hash: block.indexBlockHash,
        burn_block_height: block.burnHeight,
      });
    }
    if (path === '/extended/v1/tx/mempool') {
      const params = new URLSearchParams(query);
      const limit = Number(params.get('limit') ?? 20);
      const offset = Number(params.get('offset') ?? 0);
      // ?address= lists that principal's pending transactions (as sender or recipient); the ETag stays the global one.
      const address = params.get('address');
      const listed =
        address === null ? this.mempool : this.mempool.filter((tx) => tx.sender_address === address || tx.token_transfer.recipient_address === address);
      const results = [...listed].reverse().slice(offset, offset + limit);
      return json(200, { limit, offset, total: listed.length, results }, sha(this.mempool.map((tx) => tx.tx_id).join()));
    }
    if (path === '/extended/v1/tx/multiple') {
      const params = new URLSearchParams(query);
      const answer: Record<string, unknown> = {};
      for (const id of params.getAll('tx_id')) {
        const tx = this.blocks.flatMap((b) => b.txs).find((t) => t.tx_id === id);
        answer[id] = tx ? { found: true, result: { tx_id: id, event_count: tx.events.length, events: tx.events } } : { found: false, result: { tx_id: id } };
      }
      return json(200, answer);
    }
    match = /^\/v2\/accounts\/([^/]+)$/.exec(path);
    if (match) {
      const state = this.state(match[1] as string);
      const hex = (n: number) => `0x${n.toString(16).padStart(32, '0')}`;
      return json(200, { balance: hex(1000 - state.confirmed), locked: hex(0), unlock_height: 0, nonce: state.confirmed, balance_proof: '', nonce_proof: '' });
    }
    match = /^\/extended\/v1\/address\/([^/]+)\/(stx|transactions|nonces)$/.exec(path);
    if (match) {
      const principal = match[1] as string;
      const state = this.state(principal);
      if (match[2] === 'stx') {
        const etag = sha(`${principal}:${state.confirmed}:${state.pending}`);
        return json(200, { balance: String(1000 - state.confirmed), locked: '0', confirmed_txs: state.confirmed, pending_txs: state.pending }, etag);
      }
      if (match[2] === 'nonces') {
        // The principal_mempool ETag moves with any activity; the body only with what it sent.
        const etag = sha(`${principal}:${state.confirmed}:${state.pending}`);
        const next = state.sent + state.sentPending;
        return json(
          200,
          {
            last_mempool_tx_nonce: state.sentPending > 0 ? next - 1 : null,
            last_executed_tx_nonce: state.sent > 0 ? state.sent - 1 : null,
            possible_next_nonce: next,
            detected_missing_nonces: [],
            detected_mempool_nonces: [],
          },
          etag,
        );
      }
      return json(
        200,
        { limit: 20, offset: 0, total: state.confirmed, results: [], principal, confirmed_txs: state.confirmed },
        sha(`${principal}:${state.confirmed}`),
      );
    }
    return json(404, { error: `no route ${req.method} ${path}` });
  }
}

/** The principals a transaction of this model touches (as the learner must find them). */
function touched(tx: LearnTx): string[] {
  const principals = [tx.sender_address];
  if (tx.token_transfer) principals.push(tx.token_transfer.recipient_address);
  for (const event of tx.events as { asset?: { sender?: string; recipient?: string } }[]) {
    if (event.asset?.sender) principals.push(event.asset.sender);
    if (event.asset?.recipient) principals.push(event.asset.recipient);
  }
  return principals;
}

function readBody(req: IncomingMessage, onBytes?: (bytes: number) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      onBytes?.(chunk.length);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startActivityUpstream(): Promise<ActivityUpstream> {
  const upstream = new ActivityUpstream();
  await upstream.listen();
  return upstream;
}
