/**
 * Broadcast touches between instances (src/cache/activity-announcements.ts), with a real
 * registry on each side and the publish function as the only seam: long lists are split, origin
 * first; contract names up to 128 characters pass; a message a receiver cannot read in full makes
 * every principal changed there instead of being dropped.
 */
import { describe, expect, it } from 'vitest';
import { ActivityAnnouncements, MAX_PRINCIPALS_PER_MESSAGE } from '../../src/cache/activity-announcements.js';
import { PrincipalActivity } from '../../src/chain/activity.js';
import { noopTelemetry } from '../../src/telemetry/telemetry.js';

const ORIGIN = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const OTHER = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const contract = (length: number, i = 0): string => `${OTHER}.c${i}-${'x'.repeat(length)}`.slice(0, OTHER.length + 1 + length);

function pair(now: () => number) {
  const messages: string[] = [];
  const make = (activity: PrincipalActivity) =>
    new ActivityAnnouncements({
      activity,
      publish: async (_channel, message) => void messages.push(message),
      keyPrefix: 'k',
      clock: now,
      telemetry: noopTelemetry,
    });
  const senderActivity = new PrincipalActivity({ maxPrincipals: 1_000, settleMs: 0, coinbaseWindowBlocks: 0, watchMs: 7_000 });
  const receiverActivity = new PrincipalActivity({ maxPrincipals: 1_000, settleMs: 0, coinbaseWindowBlocks: 0, watchMs: 7_000 });
  return { messages, sender: make(senderActivity), receiver: make(receiverActivity), receiverActivity };
}

describe('activity announcements', () => {
  it('split a long list into messages of at most the bound, the origin in the first, and the receiver applies them all', () => {
    const { messages, sender, receiver, receiverActivity } = pair(() => 5_000);
    const principals = [ORIGIN, ...Array.from({ length: 150 }, (_, i) => contract(20, i))];
    sender.announce(principals);
    expect(messages).toHaveLength(Math.ceil(principals.length / MAX_PRINCIPALS_PER_MESSAGE));
    expect((JSON.parse(messages[0] as string) as { principals: string[] }).principals[0]).toBe(ORIGIN);
    for (const message of messages) receiver.apply(message);
    for (const principal of principals) expect(receiverActivity.principalChangedAfter(principal, 4_999)).toBe(true);
    expect(receiverActivity.principalChangedAfter(OTHER, 4_999)).toBe(false);
  });

  it('carry contract principals with names of 41 to 128 characters', () => {
    const { messages, sender, receiver, receiverActivity } = pair(() => 5_000);
    const long = contract(128);
    sender.announce([ORIGIN, long]);
    receiver.apply(messages[0] as string);
    expect(receiverActivity.principalChangedAfter(ORIGIN, 4_999)).toBe(true);
    expect(receiverActivity.principalChangedAfter(long, 4_999)).toBe(true);
    expect(receiverActivity.principalChangedAfter(OTHER, 4_999)).toBe(false);
  });

  it('a list over the bound, or with an entry that is not a principal, still marks what it can read and makes every principal changed', () => {
    for (const principals of [
      [ORIGIN, ...Array.from({ length: 80 }, (_, i) => contract(10, i))],
      [ORIGIN, 'not a principal'],
      [ORIGIN, contract(129)],
    ]) {
      const { receiver, receiverActivity } = pair(() => 5_000);
      receiver.apply(JSON.stringify({ from: 'a peer', principals }));
      expect(receiverActivity.principalChangedAfter(ORIGIN, 4_999)).toBe(true);
      expect(receiverActivity.principalChangedAfter(OTHER, 4_999)).toBe(true);
      expect(receiver.received).toBe(1);
    }
  });

  it('an unknown sender (null) makes every principal and the mempool changed on the receiver', () => {
    const { messages, sender, receiver, receiverActivity } = pair(() => 5_000);
    sender.announce(null);
    receiver.apply(messages[0] as string);
    expect(receiverActivity.principalChangedAfter(OTHER, 4_999)).toBe(true);
    expect(receiverActivity.mempoolChangedAfter(4_999)).toBe(true);
    expect(receiverActivity.principalChangedAfter(OTHER, 5_001)).toBe(false);
  });

  it('a message that is not an announcement is ignored', () => {
    const { receiver, receiverActivity } = pair(() => 5_000);
    receiver.apply('{"principals":[]}');
    receiver.apply('not json');
    expect(receiver.received).toBe(0);
    expect(receiverActivity.principalChangedAfter(OTHER, 4_999)).toBe(false);
  });
});
