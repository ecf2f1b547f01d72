/**
 * A client's JSON-RPC message on `/extended/v1/ws`, read exactly as the upstream's channel reads
 * it (stacks-blockchain-api src/api/routes/ws/channels/ws-rpc-channel.ts, handleClientMessage),
 * so that the fan-out can answer it itself with the upstream's bytes: the same library
 * (jsonrpc-lite) parses the message and builds the replies, batches get an array, client
 * notifications get nothing, a message that fails as a whole (bad JSON, a binary frame, a
 * handler that throws) gets one error with id null, and the validation messages are the
 * upstream's. What the upstream would do to its subscriptions is returned as topic changes,
 * keyed as the shared link keys them (PLAN-16: `block`, `tx_update:<tx_id>`, ...).
 *
 * Pure: no socket, no clock. `notificationTopicKey` is the other direction: which topic an
 * upstream notification belongs to, read from the fields the upstream's process*Update
 * functions match subscribers on.
 */
import { error as rpcError, JsonRpcError, parse, success, type ID, type IParsedObject, type IParsedObjectRequest, type JsonRpc } from 'jsonrpc-lite';
import { isValidPrincipal } from '../routes/handler-checks.js';

export type RpcEvent =
  'block' | 'microblock' | 'mempool' | 'nft_event' | 'tx_update' | 'address_tx_update' | 'address_balance_update' | 'nft_asset_event' | 'nft_collection_event';

/** Events whose subscriptions carry no argument: the topic key is the event name. */
const PLAIN_EVENTS: ReadonlySet<string> = new Set(['block', 'microblock', 'mempool', 'nft_event']);

export interface Topic {
  /** The link's key: `block`, `tx_update:0x…`, `address_tx_update:SP…`, `nft_asset_event:<id>+<value>`, … */
  key: string;
  event: RpcEvent;
  /** What the link sends upstream to hold this topic: params that give the same key there. */
  upstreamParams: Record<string, unknown>;
}

export interface TopicChange {
  action: 'subscribe' | 'unsubscribe';
  topic: Topic;
  /** The request's id and the index of its response, so that a refused subscribe can be answered with an error instead. */
  id: ID;
  response: number;
}

/** The reply the upstream sends: nothing, one text already final, or the responses (an array when the client sent a batch). */
export type ReplyPlan = { kind: 'none' } | { kind: 'text'; text: string } | { kind: 'responses'; batch: boolean; responses: JsonRpc[] };

export interface ClientMessageOutcome {
  /** Subscription changes in the order the upstream makes them (also those made before a handler threw). */
  changes: TopicChange[];
  reply: ReplyPlan;
}

/**
 * Reads one client message. `isBinary`: a binary frame, which the upstream (ws 7: text frames
 * are strings, binary ones Buffers) refuses as a parse error naming the Buffer.
 */
export function readClientMessage(data: Buffer, isBinary: boolean): ClientMessageOutcome {
  const changes: TopicChange[] = [];
  try {
    if (isBinary) throw JsonRpcError.parseError(`unexpected data type: ${data.constructor.name}`);
    const parsed = parse(data.toString());
    const batch = Array.isArray(parsed);
    // Client notifications get no answer (JSON-RPC 2.0 §4.1), in a batch or alone.
    const requests = (batch ? parsed : [parsed]).filter((request) => request.type !== 'notification');
    const responses = requests.map((request, index) => respondTo(request, index, changes));
    if (batch) return { changes, reply: { kind: 'responses', batch: true, responses } };
    return { changes, reply: responses.length === 1 ? { kind: 'responses', batch: false, responses } : { kind: 'none' } };
  } catch (thrown) {
    // The upstream answers a message that failed as a whole with id null; changes made before stay made.
    const reason = thrown instanceof JsonRpcError ? thrown : JsonRpcError.internalError(String(thrown));
    return { changes, reply: { kind: 'text', text: rpcError(null, reason).serialize() } };
  }
}

/** The text sent for a plan (undefined: nothing is sent), byte for byte what the upstream sends. */
export function renderReply(plan: ReplyPlan): string | undefined {
  switch (plan.kind) {
    case 'none':
      return undefined;
    case 'text':
      return plan.text;
    case 'responses':
      return plan.batch ? JSON.stringify(plan.responses) : plan.responses[0]?.serialize();
  }
}

/** The proxy's own refusal of a subscribe (a bound the upstream does not have): a JSON-RPC server error. */
export function subscriptionRefused(id: ID, reason: string): JsonRpc {
  return rpcError(id, new JsonRpcError('Too many subscriptions', SUBSCRIPTION_REFUSED_CODE, reason));
}

/** The proxy's refusal of a subscribe whose topic key is longer than `maxLength` (client-bounds.ts MAX_TOPIC_LENGTH). */
export function topicTooLong(id: ID, maxLength: number): JsonRpc {
  return rpcError(id, new JsonRpcError('Topic too long', SUBSCRIPTION_REFUSED_CODE, `a topic may be at most ${maxLength} characters`));
}

/** JSON-RPC 2.0 reserves -32000 to -32099 for implementation-defined server errors. */
export const SUBSCRIPTION_REFUSED_CODE = -32000;

function respondTo(request: IParsedObject, index: number, changes: TopicChange[]): JsonRpc {
  switch (request.type) {
    case 'request':
      return handleRequest(request, index, changes);
    case 'error':
      return rpcError(request.payload.id, JsonRpcError.invalidRequest('unexpected error msg from client'));
    case 'success':
      return rpcError(request.payload.id, JsonRpcError.invalidRequest('unexpected success msg from client'));
    case 'invalid':
      return rpcError(null, request.payload);
    default:
      return rpcError(null, JsonRpcError.invalidRequest('unexpected msg type from client'));
  }
}

function handleRequest(request: IParsedObjectRequest, index: number, changes: TopicChange[]): JsonRpc {
  const { id, method } = request.payload;
  if (method !== 'subscribe' && method !== 'unsubscribe') return rpcError(id, JsonRpcError.methodNotFound(null));
  const params = request.payload.params as Record<string, unknown> | undefined;
  if (!params || !params.event) return rpcError(id, JsonRpcError.invalidParams('subscription requests must include an event name'));
  const decided = decideSubscription(params);
  if ('invalid' in decided) return rpcError(id, JsonRpcError.invalidParams(decided.invalid));
  if (decided.topic) changes.push({ action: method, topic: decided.topic, id, response: index });
  return success(id, decided.result);
}

type Decision = { invalid: string } | { topic: Topic | undefined; result: Record<string, unknown> };

/** The upstream's handle*Subscription: its validation, its normalization, its reply's result. */
function decideSubscription(params: Record<string, unknown>): Decision {
  const event = params.event;
  if (typeof event === 'string' && PLAIN_EVENTS.has(event)) {
    return { topic: { key: event, event: event as RpcEvent, upstreamParams: { event } }, result: {} };
  }
  switch (event) {
    case 'tx_update': {
      const txId = normalizeHashString(params.tx_id);
      if (!txId) return { invalid: 'invalid tx_id' };
      return { topic: { key: `tx_update:${txId}`, event, upstreamParams: { event, tx_id: txId } }, result: { tx_id: txId } };
    }
    case 'address_tx_update':
    case 'address_balance_update': {
      const address = params.address;
      if (typeof address !== 'string' || !isValidPrincipal(address)) return { invalid: 'invalid address' };
      return { topic: { key: `${event}:${address}`, event, upstreamParams: { event, address } }, result: { address } };
    }
    case 'nft_asset_event': {
      const { asset_identifier: assetIdentifier, value } = params;
      // The upstream keys this topic with a template literal of whatever the client sent (an
      // object whose toString is not a function throws here as it does there).
      const key = `nft_asset_event:${String(assetIdentifier)}+${String(value)}`;
      return {
        topic: { key, event, upstreamParams: { event, asset_identifier: assetIdentifier, value } },
        result: { asset_identifier: assetIdentifier, value },
      };
    }
    case 'nft_collection_event': {
      const assetIdentifier = params.asset_identifier;
      // The upstream's production metrics quote the identifier in a template literal (which may throw, as here).
      const quoted = `${String(assetIdentifier)}`;
      // Its subscription is keyed by the value itself: only a string can ever match a notification.
      const topic: Topic | undefined =
        typeof assetIdentifier === 'string'
          ? { key: `nft_collection_event:${quoted}`, event, upstreamParams: { event, asset_identifier: assetIdentifier } }
          : undefined;
      return { topic, result: { asset_identifier: assetIdentifier } };
    }
    default:
      return { invalid: 'subscription request must use a valid event name' };
  }
}

/**
 * The upstream's normalizeHashString: a 32-byte hex string, with or without `0x` (any case),
 * becomes lowercase with `0x`; anything else is false. Decoded the same way (Buffer's hex
 * decoding stops at the first non-hex pair, so such a string has fewer than 32 bytes).
 */
export function normalizeHashString(input: unknown): string | false {
  if (typeof input !== 'string') return false;
  let hash: Buffer | undefined;
  if (input.length === 66 && input.slice(0, 2).toLowerCase() === '0x') hash = Buffer.from(input.slice(2), 'hex');
  else if (input.length === 64) hash = Buffer.from(input, 'hex');
  if (hash === undefined || hash.length !== 32) return false;
  return `0x${hash.toString('hex')}`;
}

const fieldOf = (value: unknown, field: string): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[field] : undefined;

const textField = (value: unknown, field: string): string | undefined => {
  const found = fieldOf(value, field);
  return typeof found === 'string' ? found : undefined;
};

/**
 * The topic an upstream notification belongs to, from the field the upstream matched its
 * subscribers on: the tx_id of `tx_update`, the address of the address updates, the asset
 * identifier (and the value's hex, the upstream's `nftEvent.value`) of the NFT events.
 * Undefined: not a notification any subscription of this channel receives.
 */
export function notificationTopicKey(method: string, params: unknown): string | undefined {
  if (PLAIN_EVENTS.has(method)) return method;
  switch (method) {
    case 'tx_update': {
      const txId = textField(params, 'tx_id');
      return txId === undefined ? undefined : `tx_update:${txId}`;
    }
    case 'address_tx_update':
    case 'address_balance_update': {
      const address = textField(params, 'address');
      return address === undefined ? undefined : `${method}:${address}`;
    }
    case 'nft_asset_event': {
      const assetIdentifier = textField(params, 'asset_identifier');
      const valueHex = textField(fieldOf(params, 'value'), 'hex');
      return assetIdentifier === undefined || valueHex === undefined ? undefined : `nft_asset_event:${assetIdentifier}+${valueHex}`;
    }
    case 'nft_collection_event': {
      const assetIdentifier = textField(params, 'asset_identifier');
      return assetIdentifier === undefined ? undefined : `nft_collection_event:${assetIdentifier}`;
    }
    default:
      return undefined;
  }
}
