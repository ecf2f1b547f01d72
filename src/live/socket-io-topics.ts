/**
 * The topics (rooms) of the upstream's Socket.IO channel and its exact validation, so that the
 * proxy accepts, refuses and acknowledges what the upstream would, byte for byte (source:
 * stacks-blockchain-api src/api/routes/ws/channels/socket-io-channel.ts,
 * getInvalidSubscriptionTopics). Pure; linear in the input.
 *
 * The upstream's quirks are kept on purpose, since a client can see them:
 * - one topic (`subscribe('x')`) is valid when the check returns a falsy value, so the empty
 *   topic `''` is accepted there, while in a list (`subscribe([...])`, the handshake query) the
 *   same `''` is invalid;
 * - only the text between the first and second `:` is checked for `address-*` and
 *   `transaction` (`transaction:0x…:anything` is valid: a room that never gets an event);
 * - anything but a string (a number, an object, null) makes the upstream's check throw: no
 *   acknowledgement, no join; a list nested in a list passes unchecked and joins nothing useful.
 */
import { hexInputError, isValidPrincipal } from '../routes/handler-checks.js';

/** What the upstream does with a `subscribe` argument or the handshake's topics. */
export type TopicCheck =
  /** Joins `rooms` and acknowledges with `null`. */
  | { kind: 'valid'; rooms: string[] }
  /** Joins nothing and does not acknowledge (handshake: refuses the connection with `Invalid topic: …`). */
  | { kind: 'invalid'; topics: string[] }
  /** The upstream's check throws: nothing joined, nothing acknowledged. */
  | { kind: 'unreadable' };

const NFT_ASSET_EVENT_PREFIX = 'nft-asset-event:'.length; // the upstream's substring(16)
const NFT_COLLECTION_EVENT_PREFIX = 'nft-collection-event:'.length; // substring(21)

/** The upstream's isValidTxId: validateRequestHexInput passes. */
const isValidTxId = (value: string): boolean => hexInputError(value) === undefined;

/** The upstream's isSubValid for a string: undefined when valid, else the topic itself. */
function invalidTopic(topic: string): string | undefined {
  if (topic.includes(':')) {
    const colon = topic.indexOf(':');
    const kind = topic.slice(0, colon);
    const nextColon = topic.indexOf(':', colon + 1);
    // `sub.split(':')[1]`: the text up to the next ':'.
    const value = topic.slice(colon + 1, nextColon < 0 ? undefined : nextColon);
    switch (kind) {
      case 'address-transaction':
      case 'address-stx-balance':
        return isValidPrincipal(value) ? undefined : topic;
      case 'transaction':
        return isValidTxId(value) ? undefined : topic;
      case 'nft-asset-event': {
        const [assetIdentifier = '', token] = topic.substring(NFT_ASSET_EVENT_PREFIX).split('+', 2);
        const [contractId = '', tokenClass] = assetIdentifier.split('::', 2);
        return token && tokenClass && isValidPrincipal(contractId) ? undefined : topic;
      }
      case 'nft-collection-event': {
        const [contractId = '', tokenClass] = topic.substring(NFT_COLLECTION_EVENT_PREFIX).split('::', 2);
        return tokenClass && isValidPrincipal(contractId) ? undefined : topic;
      }
      default:
        return topic;
    }
  }
  switch (topic) {
    case 'block':
    case 'mempool':
    case 'microblock':
    case 'nft-event':
      return undefined;
    default:
      return topic;
  }
}

/** The upstream's check of a `subscribe` argument: one topic, or a list of them. */
export function checkTopics(subscription: unknown): TopicCheck {
  if (typeof subscription === 'string') {
    // `invalidSub ? [invalidSub] : undefined`: the empty topic is falsy, hence valid.
    const invalid = invalidTopic(subscription);
    return invalid ? { kind: 'invalid', topics: [invalid] } : { kind: 'valid', rooms: [subscription] };
  }
  if (!Array.isArray(subscription)) return { kind: 'unreadable' };
  const rooms: string[] = [];
  const invalid: string[] = [];
  for (const item of subscription as unknown[]) {
    if (typeof item === 'string') {
      const bad = invalidTopic(item);
      if (bad === undefined) rooms.push(item);
      else invalid.push(bad);
    } else if (Array.isArray(item)) {
      // `sub.includes(':')` on a list, then `sub.split` throws when it holds ':'; otherwise the
      // list itself comes back, which the upstream does not count as invalid (not a string).
      if ((item as unknown[]).includes(':')) return { kind: 'unreadable' };
    } else return { kind: 'unreadable' };
  }
  return invalid.length > 0 ? { kind: 'invalid', topics: invalid } : { kind: 'valid', rooms };
}

/**
 * The topics named in the handshake's `subscriptions` query (one value or repeated), split on
 * ',' as the upstream does; undefined when absent or empty (the upstream skips a falsy value).
 */
export function handshakeTopics(subscriptions: unknown): string[] | undefined {
  if (typeof subscriptions === 'string') return subscriptions === '' ? undefined : subscriptions.split(',');
  if (Array.isArray(subscriptions)) return (subscriptions as unknown[]).flatMap((value) => (typeof value === 'string' ? value.split(',') : []));
  return undefined;
}

/** The upstream's handshake refusal, sent as the CONNECT_ERROR's message. */
export const invalidTopicMessage = (topics: readonly string[]): string => `Invalid topic: ${topics.join(', ')}`;

/** The kinds of topic, for metric labels (a bounded set: the text before ':', else `other`). */
export const TOPIC_KINDS = [
  'block',
  'microblock',
  'mempool',
  'nft-event',
  'transaction',
  'address-transaction',
  'address-stx-balance',
  'nft-asset-event',
  'nft-collection-event',
] as const;
export type TopicKind = (typeof TOPIC_KINDS)[number] | 'other';

export function topicKind(topic: string): TopicKind {
  const colon = topic.indexOf(':');
  const head = colon < 0 ? topic : topic.slice(0, colon);
  return (TOPIC_KINDS as readonly string[]).includes(head) ? (head as TopicKind) : 'other';
}
