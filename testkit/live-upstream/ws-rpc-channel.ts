/**
 * The upstream's JSON-RPC WebSocket channel (`/extended/v1/ws`), written from its source
 * (hirosystems/stacks-blockchain-api src/api/routes/ws/channels/ws-rpc-channel.ts) for the fake
 * upstream: `subscribe` / `unsubscribe` requests with `params.event`, the same validation and
 * the same replies, serialized by the same library (jsonrpc-lite) so the bytes are the
 * upstream's; notifications to the subscribers of a topic. Tests drive it: `publish`, counts of
 * connections, `dropAll()` (as an upstream restart or a load balancer cutting idle sockets
 * does), `setSilent()` (a half-dead connection: nothing answered, not even pings) and
 * `sendToAll()` (any frame, malformed or huge, as a hostile upstream would).
 *
 * What it leaves out: the upstream's heartbeat that drops clients not answering its pings every
 * 5 s (the `ws` client answers pings by itself) and its per-message send timeout.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { error as rpcError, JsonRpcError, notification as rpcNotification, parse as parseRpc, success as rpcSuccess } from 'jsonrpc-lite';
import type { IParsedObjectRequest, JsonRpc } from 'jsonrpc-lite';
import { WebSocketServer, type WebSocket } from 'ws';
import { isValidPrincipal } from '../../src/routes/handler-checks.js';

/** Upgrades whose URL starts with it are this channel's, as the upstream's `startsWith` check. */
export const RPC_CHANNEL_PATH = '/extended/v1/ws';

/** The upstream's subscription managers, one per kind; each keyed as the upstream keys it. */
type Kind =
  'block' | 'microblock' | 'mempool' | 'transaction' | 'principalTransactions' | 'principalStxBalance' | 'nftEvent' | 'nftAssetEvent' | 'nftCollectionEvent';

/** One subscribe or unsubscribe request the channel answered, for tests to assert on. */
export interface ChannelRequest {
  method: string;
  params: unknown;
}

/** A 32-byte hex hash, lowercase with 0x, or false (the upstream's helpers.ts normalizeHashString). */
export function normalizeHashString(input: unknown): string | false {
  if (typeof input !== 'string') return false;
  let hash: Buffer | undefined;
  if (input.length === 66 && input.slice(0, 2).toLowerCase() === '0x') hash = Buffer.from(input.slice(2), 'hex');
  else if (input.length === 64) hash = Buffer.from(input, 'hex');
  if (hash === undefined || hash.length !== 32) return false;
  return `0x${hash.toString('hex')}`;
}

export class FakeRpcChannel {
  private readonly wss = new WebSocketServer({ noServer: true, autoPong: false });
  private readonly topics = new Map<Kind, Map<string, Set<WebSocket>>>();
  private silent = false;
  private publishing = true;
  /** Connections accepted since the start (reconnects count again). */
  connectionsOpened = 0;
  /** Every subscribe and unsubscribe request answered, in order. */
  readonly requests: ChannelRequest[] = [];

  /** Connections open now. */
  get connections(): number {
    return this.wss.clients.size;
  }

  /** Whether this channel takes an upgrade to `url`. */
  handles(url: string): boolean {
    return url.startsWith(RPC_CHANNEL_PATH);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  /** Subscribers of a topic now (`block`, a tx id, an address, ...), as the upstream keys them. */
  subscribers(kind: Kind, key: string = kind): number {
    return this.topics.get(kind)?.get(key)?.size ?? 0;
  }

  /**
   * Sends a notification to the subscribers of its topic, as the upstream's process*Update
   * methods do (`address_tx_update` and `address_balance_update` route by `params.address`,
   * `tx_update` by `params.tx_id`, `nft_asset_event` by asset_identifier+value,
   * `nft_collection_event` by asset_identifier). Returns how many connections it went to.
   */
  publish(method: string, params: Record<string, unknown>): number {
    const route = routeOf(method, params);
    if (!route) throw new Error(`publish: no topic for ${method}`);
    const subscribers = this.topics.get(route.kind)?.get(route.key);
    if (!subscribers || this.silent || !this.publishing) return 0;
    const text = rpcNotification(method, params).serialize();
    for (const ws of subscribers) ws.send(text);
    return subscribers.size;
  }

  /** Sends any frame to every connection (a malformed or huge one from a hostile upstream). */
  sendToAll(frame: string | Buffer): void {
    for (const ws of this.wss.clients) ws.send(frame);
  }

  /** Closes every connection at once, without a close frame (a restart, a cut connection). */
  dropAll(): void {
    for (const ws of this.wss.clients) ws.terminate();
  }

  /** While silent: no reply, no notification, no pong (a connection dead though TCP holds). */
  setSilent(silent: boolean): void {
    this.silent = silent;
  }

  /** While off, publish() sends nothing (a feed gone quiet while the connection and its pings live on). */
  setPublishing(publishing: boolean): void {
    this.publishing = publishing;
  }

  close(): void {
    this.dropAll();
    this.wss.close();
    this.topics.clear();
  }

  private accept(ws: WebSocket): void {
    this.connectionsOpened += 1;
    // A client that breaks the protocol must not crash the test process with an unhandled 'error'.
    ws.on('error', () => ws.terminate());
    ws.on('ping', (data) => {
      if (!this.silent) ws.pong(data);
    });
    ws.on('message', (data, isBinary) => {
      if (this.silent) return;
      // The upstream (ws 7 semantics) takes text frames as strings; anything else is refused.
      this.onMessage(ws, isBinary ? data : data.toString());
    });
    ws.on('close', () => {
      for (const keys of this.topics.values()) {
        for (const [key, clients] of keys) {
          clients.delete(ws);
          if (clients.size === 0) keys.delete(key);
        }
      }
    });
  }

  /** The upstream's handleClientMessage: one reply per request, a batch answered as an array. */
  private onMessage(ws: WebSocket, data: unknown): void {
    try {
      if (typeof data !== 'string') {
        const name = (data as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof data;
        throw JsonRpcError.parseError(`unexpected data type: ${name}`);
      }
      const parsed = parseRpc(data);
      const isBatch = Array.isArray(parsed);
      // Client notifications get no reply (the specification says so).
      const requests = (Array.isArray(parsed) ? parsed : [parsed]).filter((req) => String(req.type) !== 'notification');
      const responses: JsonRpc[] = requests.map((req) => {
        switch (String(req.type)) {
          case 'request':
            return this.onRequest(ws, req as IParsedObjectRequest);
          case 'error':
            return rpcError((req.payload as { id: string | number }).id, JsonRpcError.invalidRequest('unexpected error msg from client'));
          case 'success':
            return rpcError((req.payload as { id: string | number }).id, JsonRpcError.invalidRequest('unexpected success msg from client'));
          case 'invalid':
            return rpcError(null, req.payload as JsonRpcError);
          default:
            return rpcError(null, JsonRpcError.invalidRequest('unexpected msg type from client'));
        }
      });
      if (isBatch) ws.send(JSON.stringify(responses));
      else if (responses.length === 1 && responses[0]) ws.send(responses[0].serialize());
    } catch (err) {
      // The id is null when the request could not be read.
      try {
        const reply = err instanceof JsonRpcError ? err : JsonRpcError.internalError(String(err));
        ws.send(rpcError(null, reply).serialize());
      } catch {
        // As the upstream: nothing more to do.
      }
    }
  }

  private onRequest(ws: WebSocket, req: IParsedObjectRequest): JsonRpc {
    const { id, method } = req.payload;
    if (method !== 'subscribe' && method !== 'unsubscribe') return rpcError(id, JsonRpcError.methodNotFound(null));
    const params = req.payload.params as Record<string, unknown> | undefined;
    this.requests.push({ method, params });
    const subscribe = method === 'subscribe';
    if (!params || !params.event) return rpcError(id, JsonRpcError.invalidParams('subscription requests must include an event name'));
    const event = params.event;
    switch (event) {
      case 'tx_update': {
        const txId = normalizeHashString(params.tx_id);
        if (!txId) return rpcError(id, JsonRpcError.invalidParams('invalid tx_id'));
        this.hold(ws, 'transaction', txId, subscribe);
        return rpcSuccess(id, { tx_id: txId });
      }
      case 'address_tx_update':
      case 'address_balance_update': {
        const address = params.address;
        if (typeof address !== 'string' || !isValidPrincipal(address)) return rpcError(id, JsonRpcError.invalidParams('invalid address'));
        this.hold(ws, event === 'address_tx_update' ? 'principalTransactions' : 'principalStxBalance', address, subscribe);
        return rpcSuccess(id, { address });
      }
      case 'block':
      case 'microblock':
      case 'mempool':
        this.hold(ws, event as 'block' | 'microblock' | 'mempool', event as string, subscribe);
        return rpcSuccess(id, {});
      case 'nft_event':
        this.hold(ws, 'nftEvent', 'nft_event', subscribe);
        return rpcSuccess(id, {});
      case 'nft_asset_event': {
        // Not validated by the upstream: `undefined+undefined` is a topic there too.
        const assetIdentifier = params.asset_identifier as string;
        const value = params.value as string;
        this.hold(ws, 'nftAssetEvent', `${assetIdentifier}+${value}`, subscribe);
        return rpcSuccess(id, { asset_identifier: assetIdentifier, value });
      }
      case 'nft_collection_event': {
        const assetIdentifier = params.asset_identifier as string;
        this.hold(ws, 'nftCollectionEvent', `${assetIdentifier}`, subscribe);
        return rpcSuccess(id, { asset_identifier: assetIdentifier });
      }
      default:
        return rpcError(id, JsonRpcError.invalidParams('subscription request must use a valid event name'));
    }
  }

  private hold(ws: WebSocket, kind: Kind, key: string, subscribe: boolean): void {
    let keys = this.topics.get(kind);
    if (!keys) {
      keys = new Map();
      this.topics.set(kind, keys);
    }
    const clients = keys.get(key);
    if (subscribe) {
      if (clients) clients.add(ws);
      else keys.set(key, new Set([ws]));
    } else if (clients) {
      clients.delete(ws);
      if (clients.size === 0) keys.delete(key);
    }
  }
}

/** Which subscribers a notification goes to, as the upstream's process*Update methods pick them. */
function routeOf(method: string, params: Record<string, unknown>): { kind: Kind; key: string } | undefined {
  switch (method) {
    case 'block':
    case 'microblock':
    case 'mempool':
      return { kind: method, key: method };
    case 'nft_event':
      return { kind: 'nftEvent', key: 'nft_event' };
    case 'tx_update':
      return { kind: 'transaction', key: String(params.tx_id) };
    case 'address_tx_update':
      return { kind: 'principalTransactions', key: String(params.address) };
    case 'address_balance_update':
      return { kind: 'principalStxBalance', key: String(params.address) };
    case 'nft_asset_event':
      return { kind: 'nftAssetEvent', key: `${String(params.asset_identifier)}+${String(params.value)}` };
    case 'nft_collection_event':
      return { kind: 'nftCollectionEvent', key: String(params.asset_identifier) };
    default:
      return undefined;
  }
}
