/**
 * The Socket.IO topic check (src/live/socket-io-topics.ts) answers as the upstream's
 * getInvalidSubscriptionTopics, quirks included; the fake upstream's separate transcription of
 * the upstream's code (testkit/live-upstream/socket-io-channel.ts) is the oracle.
 */
import { describe, expect, it } from 'vitest';
import { checkTopics, handshakeTopics, invalidTopicMessage, topicKind } from '../../src/live/socket-io-topics.js';
import { eventPacketKind } from '../../src/live/socket-io-upstream.js';
import { invalidTopics as upstreamInvalidTopics } from '../../testkit/live-upstream/socket-io-channel.js';
import { RECORDED } from '../../testkit/index.js';

const P = RECORDED.principal;
const C = RECORDED.contractId;
const TX = `0x${'ab'.repeat(32)}`;

const TOPICS = [
  'block',
  'mempool',
  'microblock',
  'nft-event',
  'Block',
  'blocks',
  '',
  ':',
  'block:',
  `transaction:${TX}`,
  'transaction:0x',
  'transaction:0xabc',
  'transaction:0xzz',
  `transaction:${TX.slice(2)}`,
  `transaction:0X${'ab'.repeat(32)}`,
  `transaction:${TX}:anything`,
  `address-transaction:${P}`,
  `address-transaction:${C}`,
  `address-transaction:${P}.name.more`,
  'address-transaction:SP000',
  'address-transaction:',
  `address-stx-balance:${P}`,
  `address-stx-balance:${P}:x`,
  `address-stx-balance:${P.toLowerCase()}`,
  `nft-asset-event:${C}::token+0x01`,
  `nft-asset-event:${C}::token+`,
  `nft-asset-event:${C}+0x01`,
  `nft-asset-event:${C}::token+0x01+more`,
  `nft-asset-event:nope::token+0x01`,
  `nft-asset-event:${C}::token::x+0x01`,
  `nft-collection-event:${C}::token`,
  `nft-collection-event:${C}`,
  `nft-collection-event:nope::token`,
  `nft-collection-event:${C}::`,
  'other:thing',
  `address-transaction:${'S'.repeat(100_000)}`,
];

/** The upstream's outcome: its invalid list, or that its check threw. */
function upstream(subscription: unknown): string[] | undefined | 'throws' {
  try {
    return upstreamInvalidTopics(subscription);
  } catch {
    return 'throws';
  }
}

function proxy(subscription: unknown): string[] | undefined | 'throws' {
  const check = checkTopics(subscription);
  if (check.kind === 'unreadable') return 'throws';
  return check.kind === 'invalid' ? check.topics : undefined;
}

describe('checkTopics', () => {
  it.each(TOPICS.map((topic) => [topic.length > 80 ? `${topic.slice(0, 40)}… (${topic.length} chars)` : topic, topic]))(
    'one topic %s: as the upstream',
    (_name, topic) => {
      expect(proxy(topic)).toEqual(upstream(topic));
    },
  );

  it('a list of every topic: the same invalid ones, in order', () => {
    expect(proxy(TOPICS)).toEqual(upstream(TOPICS));
    expect(proxy(TOPICS)).toContain('');
  });

  it('the empty topic: valid alone, invalid in a list (the upstream\u2019s falsy check)', () => {
    expect(checkTopics('')).toEqual({ kind: 'valid', rooms: [''] });
    expect(checkTopics(['block', ''])).toEqual({ kind: 'invalid', topics: [''] });
  });

  it('what is not a string makes the upstream throw: unreadable, never acknowledged', () => {
    for (const value of [42, null, undefined, { topic: 'block' }, true, ['block', 7], [[':']]]) {
      expect(proxy(value)).toBe('throws');
      expect(upstream(value)).toBe('throws');
    }
  });

  it('a list nested in a list passes unchecked, as upstream, and joins nothing', () => {
    expect(checkTopics(['block', ['nope']])).toEqual({ kind: 'valid', rooms: ['block'] });
    expect(upstream(['block', ['nope']])).toBeUndefined();
  });

  it('the valid rooms of a list, in order, duplicates kept', () => {
    expect(checkTopics(['mempool', 'block', 'mempool'])).toEqual({ kind: 'valid', rooms: ['mempool', 'block', 'mempool'] });
    expect(checkTopics([])).toEqual({ kind: 'valid', rooms: [] });
  });

  it('checks a long topic as the upstream (a 2 MB transaction id is hex: valid)', () => {
    const long = `transaction:0x${'a'.repeat(2_000_000)}`;
    expect(checkTopics(long)).toEqual({ kind: 'valid', rooms: [long] });
    expect(upstream(long)).toBeUndefined();
  });
});

describe('handshakeTopics', () => {
  it('splits one value or repeated values on commas; absent or empty: none', () => {
    expect(handshakeTopics('block,mempool')).toEqual(['block', 'mempool']);
    expect(handshakeTopics(['block', 'mempool,nft-event'])).toEqual(['block', 'mempool', 'nft-event']);
    expect(handshakeTopics('block,')).toEqual(['block', '']);
    expect(handshakeTopics('')).toBeUndefined();
    expect(handshakeTopics(undefined)).toBeUndefined();
    expect(handshakeTopics([])).toEqual([]);
  });

  it('the refusal names every invalid topic as the upstream does', () => {
    const check = checkTopics(handshakeTopics('block,nope,,transaction:1'));
    expect(check).toEqual({ kind: 'invalid', topics: ['nope', '', 'transaction:1'] });
    expect(invalidTopicMessage(check.kind === 'invalid' ? check.topics : [])).toBe('Invalid topic: nope, , transaction:1');
  });
});

describe('topicKind', () => {
  it('the text before the colon when it is a known kind, else other', () => {
    expect(topicKind('block')).toBe('block');
    expect(topicKind(`address-transaction:${P}`)).toBe('address-transaction');
    expect(topicKind(`nft-asset-event:${C}::t+0x01`)).toBe('nft-asset-event');
    expect(topicKind('')).toBe('other');
    expect(topicKind('whatever:x')).toBe('other');
  });
});

describe('eventPacketKind (what socket.io-client dispatches as an event of the main namespace)', () => {
  it('hands on plain EVENT packets only; keeps the place of other events; ignores the rest', () => {
    expect(eventPacketKind('2["block",{}]')).toBe('text');
    expect(eventPacketKind('2[]')).toBe('text');
    expect(eventPacketKind('212["block"]')).toBe('other-event');
    expect(eventPacketKind('51-["block",{"_placeholder":true,"num":0}]')).toBe('other-event');
    expect(eventPacketKind('51-7["block"]')).toBe('other-event');
    expect(eventPacketKind('2/admin,["block"]')).toBe('none');
    expect(eventPacketKind('51-/admin,["block"]')).toBe('none');
    expect(eventPacketKind('5-["block"]')).toBe('none');
    expect(eventPacketKind('0{"sid":"x"}')).toBe('none');
    expect(eventPacketKind('3[null]')).toBe('none');
    expect(eventPacketKind('2')).toBe('none');
    expect(eventPacketKind('')).toBe('none');
  });
});
