/**
 * The fan-out of clients' `/extended/v1/ws` JSON-RPC subscriptions. Clients connect to the proxy
 * as they do to the upstream and get the upstream's replies byte for byte (rpc-topics.ts reads
 * their messages exactly as the upstream's channel does); the proxy holds their topics on ONE
 * shared JSON-RPC link to the healthiest upstream (upstream-rpc-link.ts: one holder per topic
 * here, whatever the number of clients), and delivers each notification, as the upstream's frame
 * text, to exactly the clients subscribed to its topic.
 *
 * Bounded: frames from clients (MAX_CLIENT_FRAME_BYTES), subscriptions per client, the length of
 * a topic (MAX_TOPIC_LENGTH: refused, never held), messages per client (MessageRate, closed 1008),
 * bytes of messages read and not yet answered (MAX_PENDING_BYTES, closed 1008), bytes waiting to
 * be written to a client (closed 1013, never buffered without end), clients that stop answering
 * pings (dropped, as the upstream drops them).
 * When the link drops, clients stay connected: the link reconnects and subscribes again to every
 * held topic; what the upstream announced in between is lost (docs/live-chain.md).
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { error as rpcError, JsonRpcError, type JsonRpc } from 'jsonrpc-lite';
import type { Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { CLOSE_GOING_AWAY, CLOSE_POLICY_VIOLATION, CLOSE_TRY_AGAIN_LATER, MAX_TOPIC_LENGTH, MessageRate, tooSlow } from './client-bounds.js';
import { RPC_PATH, type LinkState, type RpcNotification, type RpcReply, type UpstreamRpcLink } from './upstream-rpc-link.js';
import { notificationTopicKey, readClientMessage, renderReply, subscriptionRefused, topicTooLong, type Topic } from './rpc-topics.js';

/** Largest frame a client may send (subscribe messages are a few hundred bytes; a batch of 256, some 40 KB); beyond, ws closes it with 1009. */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024;
/** The upstream's ping interval (STACKS_API_WS_PING_INTERVAL, 5 s): a client that misses one pong is dropped at the next. */
export const HEARTBEAT_MS = 5_000;
/** Longest a reply waits for the upstream to confirm a new topic; then the topic stays held and the reply goes. */
export const SUBSCRIBE_WAIT_MS = 5_000;
/**
 * Bytes of one client's messages read but not yet answered (subscribes waiting, in order, for the
 * upstream's confirmation); beyond, the client is closed (1008). Counted in bytes, not messages, so
 * that a wallet pipelining a subscribe per address it watches (some 130 bytes each: thousands fit)
 * gets every reply, while what one client can make the proxy hold stays bounded. Messages wait
 * as the bytes read and are parsed when their turn comes.
 */
export const MAX_PENDING_BYTES = 1024 * 1024;
/** How long a closed client gets to finish its closing handshake before its socket is ended. */
const CLOSE_GRACE_MS = 1_000;

export type FanoutDropReason = 'slow' | 'rate' | 'subscriptions' | 'unresponsive' | 'pending' | 'topic_length';

/** What the fan-out needs of one shared upstream link. */
export type FanoutLink = Pick<UpstreamRpcLink, 'subscribe' | 'unsubscribe' | 'onNotification' | 'onState' | 'state'>;

/** What the fan-out needs of the shared links (upstream-links.ts UpstreamLinks). */
export interface RpcLinkSource {
  linkFor(origin: string): FanoutLink;
}

export interface WsRpcFanoutOptions {
  links: RpcLinkSource;
  /** The upstream to hold topics on (health.preferredOrigin()): read when the link is first needed and whenever it is down. */
  preferredOrigin: () => string;
  maxSubscriptionsPerClient: number;
  maxMessagesPerSecondPerClient: number;
  maxBufferedBytesPerClient: number;
  telemetry: Telemetry;
  clock: Clock;
  heartbeatMs?: number;
  subscribeWaitMs?: number;
}

export interface WsRpcFanout {
  /** Completes a client's upgrade (admission and its slot were decided by the upgrade router). */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
  readonly clientCount: number;
  /** Distinct topics held upstream for clients. */
  readonly topicCount: number;
  /** Closes every client with 1001 (going away), waits briefly for their close, and lets go of the link. */
  close(): Promise<void>;
}

interface Client {
  ws: WebSocket;
  keys: Set<string>;
  rate: MessageRate;
  /** Answered the last ping. */
  alive: boolean;
  /** Bytes of the messages read and not yet answered (MAX_PENDING_BYTES). */
  pendingBytes: number;
  /** Messages are answered in order, one after the other, as the upstream answers them. */
  queue: Promise<void>;
  dropped: boolean;
}

interface HeldTopic {
  topic: Topic;
  clients: Set<Client>;
  /** The upstream's answer (every later subscriber waits on it too). */
  ready: Promise<RpcReply>;
}

interface AttachedLink {
  origin: string;
  link: FanoutLink;
  detach: () => void;
}

const CHANNEL = 'rpc';

export function createWsRpcFanout(options: WsRpcFanoutOptions): WsRpcFanout {
  return new RpcFanout(options);
}

class RpcFanout implements WsRpcFanout {
  // With `path`, ws answers 400 to an upgrade routed here by prefix whose path is not exactly
  // RPC_PATH (`/extended/v1/wsx`), as the upstream's ws server does.
  private readonly wss = new WebSocketServer({
    noServer: true,
    path: RPC_PATH,
    maxPayload: MAX_CLIENT_FRAME_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  private readonly clients = new Set<Client>();
  private readonly topics = new Map<string, HeldTopic>();
  private attached: AttachedLink | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private closing = false;
  private readonly subscribeWaitMs: number;

  constructor(private readonly options: WsRpcFanoutOptions) {
    this.subscribeWaitMs = options.subscribeWaitMs ?? SUBSCRIBE_WAIT_MS;
    this.heartbeat = setInterval(() => this.beat(), options.heartbeatMs ?? HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get clientCount(): number {
    return this.clients.size;
  }

  get topicCount(): number {
    return this.topics.size;
  }

  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  private accept(ws: WebSocket): void {
    if (this.closing) {
      ws.terminate();
      return;
    }
    const client: Client = {
      ws,
      keys: new Set(),
      rate: new MessageRate(this.options.maxMessagesPerSecondPerClient, this.options.clock()),
      alive: true,
      pendingBytes: 0,
      queue: Promise.resolve(),
      dropped: false,
    };
    this.clients.add(client);
    this.options.telemetry.wsClientConnected(CHANNEL);
    ws.on('pong', () => (client.alive = true));
    ws.on('message', (data, isBinary) => this.received(client, data, isBinary));
    // A client's protocol error (a frame over maxPayload: 1009, invalid UTF-8: 1007) is closed by ws itself; never the process.
    ws.on('error', () => undefined);
    ws.once('close', () => this.forget(client));
  }

  private received(client: Client, data: RawData, isBinary: boolean): void {
    if (client.dropped) return;
    this.options.telemetry.wsMessage(CHANNEL, 'in');
    if (!client.rate.admit(this.options.clock())) return this.drop(client, 'rate', CLOSE_POLICY_VIOLATION, 'message rate exceeded');
    const message = toBuffer(data);
    if (client.pendingBytes + message.length > MAX_PENDING_BYTES) return this.drop(client, 'pending', CLOSE_POLICY_VIOLATION, 'too many unanswered messages');
    client.pendingBytes += message.length;
    client.queue = client.queue
      .then(() => this.answer(client, message, isBinary))
      // A failure answering one message must not stop the next ones (nor reach the process).
      .catch(() => undefined)
      .finally(() => (client.pendingBytes -= message.length));
  }

  /** Applies a message's subscription changes and sends the upstream's reply once the upstream holds every new topic. */
  private async answer(client: Client, message: Buffer, isBinary: boolean): Promise<void> {
    if (client.dropped) return;
    const outcome = readClientMessage(message, isBinary);
    const waits: Promise<void>[] = [];
    const reply = outcome.reply;
    const replace = (index: number, response: JsonRpc): void => {
      if (reply.kind === 'responses') reply.responses[index] = response;
    };
    for (const change of outcome.changes) {
      if (client.dropped) return;
      const key = change.topic.key;
      if (change.action === 'unsubscribe') {
        this.release(client, key);
        continue;
      }
      if (key.length > MAX_TOPIC_LENGTH) {
        // Never held nor sent upstream: a key is kept for as long as a client holds it, by the proxy and the upstream.
        this.options.telemetry.wsClientDropped(CHANNEL, 'topic_length');
        replace(change.response, topicTooLong(change.id, MAX_TOPIC_LENGTH));
        continue;
      }
      const held = this.topics.get(key);
      if (client.keys.has(key)) {
        // Already held by this client: the upstream's Set makes a second subscribe a no-op.
        if (held) waits.push(this.confirm(client, change.id, change.response, held, replace));
        continue;
      }
      if (client.keys.size >= this.options.maxSubscriptionsPerClient) {
        this.options.telemetry.wsClientDropped(CHANNEL, 'subscriptions');
        replace(change.response, subscriptionRefused(change.id, `one connection may hold at most ${this.options.maxSubscriptionsPerClient} subscriptions`));
        continue;
      }
      const entry = this.hold(client, change.topic);
      waits.push(this.confirm(client, change.id, change.response, entry, replace));
    }
    await Promise.all(waits);
    const text = renderReply(reply);
    if (text !== undefined) this.send(client, Buffer.from(text, 'utf8'));
  }

  /** Waits (bounded) for the upstream's answer to a topic; a refusal replaces the client's success and lets go of its hold. */
  private async confirm(
    client: Client,
    id: string | number | null,
    index: number,
    entry: HeldTopic,
    replace: (index: number, response: JsonRpc) => void,
  ): Promise<void> {
    const answer = await withDeadline(entry.ready, this.subscribeWaitMs);
    // Not answered in time, or the link is down: the topic stays held and is subscribed again on reconnect.
    if (answer === undefined || answer.ok) return;
    const refusal = answer.error;
    if (refusal === 'closed' || refusal === 'timeout') return;
    this.release(client, entry.topic.key);
    if (refusal === 'over-limit') {
      this.options.telemetry.wsClientDropped(CHANNEL, 'subscriptions');
      replace(index, subscriptionRefused(id, 'the proxy holds as many distinct subscriptions upstream as it may (live.fanout.maxUpstreamSubscriptions)'));
      return;
    }
    // The upstream refused what the proxy's checks let through (another upstream version): its error, under the client's id.
    replace(index, rpcError(id, upstreamError(refusal)));
  }

  private hold(client: Client, topic: Topic): HeldTopic {
    client.keys.add(topic.key);
    this.options.telemetry.wsSubscriptionsChanged(CHANNEL, topic.event, 1);
    let entry = this.topics.get(topic.key);
    if (!entry) {
      const link = this.link();
      entry = { topic, clients: new Set(), ready: link.subscribe(topic.key, topic.upstreamParams).catch(() => ({ ok: false, error: 'closed' }) as const) };
      this.topics.set(topic.key, entry);
    }
    entry.clients.add(client);
    return entry;
  }

  private release(client: Client, key: string): void {
    if (!client.keys.delete(key)) return;
    const entry = this.topics.get(key);
    if (!entry) return;
    this.options.telemetry.wsSubscriptionsChanged(CHANNEL, entry.topic.event, -1);
    entry.clients.delete(client);
    if (entry.clients.size > 0) return;
    this.topics.delete(key);
    this.attached?.link.unsubscribe(key);
  }

  /** The link topics are held on: the preferred upstream's, attached on first use. */
  private link(): FanoutLink {
    if (this.attached) return this.attached.link;
    const origin = this.options.preferredOrigin();
    const link = this.options.links.linkFor(origin);
    const stopNotifications = link.onNotification((notification) => this.deliver(notification));
    const stopState = link.onState((state) => this.linkState(state));
    this.attached = { origin, link, detach: () => (stopNotifications(), stopState()) };
    return link;
  }

  /**
   * While the link is down, a better upstream may have become the preferred one: the topics move
   * there (held on the new link, let go of on the old), so clients do not wait on a dead upstream.
   * Checked when the link drops and at every heartbeat while it stays down (health may take a
   * few failures to give up on the old upstream).
   */
  private linkState(state: LinkState): void {
    if (state === 'connecting') this.reconsiderLink();
  }

  private reconsiderLink(): void {
    const attached = this.attached;
    if (!attached || this.closing || attached.link.state === 'open') return;
    const preferred = this.options.preferredOrigin();
    if (preferred === attached.origin) return;
    attached.detach();
    this.attached = undefined;
    const link = this.link();
    for (const [key, entry] of this.topics) {
      attached.link.unsubscribe(key);
      entry.ready = link.subscribe(key, entry.topic.upstreamParams).catch(() => ({ ok: false, error: 'closed' }) as const);
    }
  }

  /** An upstream notification, as the upstream's frame text, to exactly the clients subscribed to its topic. */
  private deliver(notification: RpcNotification): void {
    this.options.telemetry.wsMessage(CHANNEL, 'upstream_in');
    const key = notificationTopicKey(notification.method, notification.params);
    const entry = key === undefined ? undefined : this.topics.get(key);
    if (!entry) return;
    // Encoded once for every client (a block notification can be a few hundred KB).
    const frame = Buffer.from(notification.text, 'utf8');
    for (const client of [...entry.clients]) this.send(client, frame);
  }

  /**
   * One text frame to a client, unless more than the bound is already waiting to be written to
   * it. Judged on what is waiting, not counting the frame: a client that reads gets a
   * notification larger than the bound (a block's can be), and a client holds at most the bound
   * plus one message (as on the Socket.IO side).
   */
  private send(client: Client, frame: Buffer): void {
    if (client.dropped || client.ws.readyState !== WebSocket.OPEN) return;
    if (tooSlow(client.ws.bufferedAmount, this.options.maxBufferedBytesPerClient)) {
      this.drop(client, 'slow', CLOSE_TRY_AGAIN_LATER, 'too slow to keep up');
      return;
    }
    client.ws.send(frame, { binary: false });
    this.options.telemetry.wsMessage(CHANNEL, 'out');
  }

  /** Ends a client over a bound: its topics go at once, its socket after a short closing handshake. */
  private drop(client: Client, reason: FanoutDropReason, code: number, why: string): void {
    if (client.dropped) return;
    this.options.telemetry.wsClientDropped(CHANNEL, reason);
    this.end(client, code, why);
  }

  private end(client: Client, code: number, why: string): void {
    client.dropped = true;
    this.releaseAll(client);
    client.ws.close(code, why);
    const force = setTimeout(() => client.ws.terminate(), CLOSE_GRACE_MS);
    force.unref();
    client.ws.once('close', () => clearTimeout(force));
  }

  private releaseAll(client: Client): void {
    for (const key of [...client.keys]) this.release(client, key);
  }

  private forget(client: Client): void {
    client.dropped = true;
    this.releaseAll(client);
    if (this.clients.delete(client)) this.options.telemetry.wsClientClosed(CHANNEL);
  }

  /** The upstream's heartbeat: a client that did not answer the previous ping is dropped. */
  private beat(): void {
    this.reconsiderLink();
    for (const client of this.clients) {
      if (client.dropped) continue;
      if (!client.alive) {
        this.options.telemetry.wsClientDropped(CHANNEL, 'unresponsive');
        client.dropped = true;
        this.releaseAll(client);
        client.ws.terminate();
        continue;
      }
      client.alive = false;
      client.ws.ping();
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.heartbeat);
    const closed = [...this.clients].map(
      (client) =>
        new Promise<void>((resolve) => {
          if (client.ws.readyState === WebSocket.CLOSED) return resolve();
          client.ws.once('close', () => resolve());
          if (!client.dropped) this.end(client, CLOSE_GOING_AWAY, 'server shutting down');
        }),
    );
    await Promise.all(closed);
    this.attached?.detach();
    this.attached = undefined;
    this.wss.close();
  }
}

const toBuffer = (data: RawData): Buffer => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));

/** An upstream's JSON-RPC error object, rebuilt so that it serializes as the upstream sent it. */
function upstreamError(error: unknown): JsonRpcError {
  const fields = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  const message = typeof fields.message === 'string' ? fields.message : 'Internal error';
  const code = typeof fields.code === 'number' ? fields.code : -32603;
  return new JsonRpcError(message, code, fields.data);
}

/** The promise's value, or undefined once `ms` passed first. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
    void promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}
