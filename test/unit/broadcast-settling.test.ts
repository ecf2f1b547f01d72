/**
 * When a broadcast's settling ends early (chain/broadcast-settling.ts): only once the mempool
 * watcher saw the upstream's API hold every broadcast naming the principal, for answers
 * validated after that poll's answer; never for what could not be looked for.
 */
import { describe, expect, it } from 'vitest';
import { BroadcastSettling } from '../../src/chain/broadcast-settling.js';
import { PrincipalActivity } from '../../src/chain/activity.js';

const SETTLE = 3_000;
const id = (n: number) => n.toString(16).padStart(64, '0');
const P = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM';
const Q = 'ST2CY5V39NHDPWSXMW9QDT3HC3GD6Q6XX4CFRK9AG';

describe('BroadcastSettling', () => {
  it('settles a principal once its broadcast is seen, for answers validated after the poll answer that saw it', () => {
    const s = new BroadcastSettling(SETTLE);
    s.accepted(id(1), [P, Q], 1_000);
    expect(s.hasSettled(P, 1_000, 1_100)).toBe(false);
    s.seen([`0x${id(1)}`], 1_400);
    expect(s.hasSettled(P, 1_000, 1_400)).toBe(false); // asked in the very moment: may predate it
    expect(s.hasSettled(P, 1_000, 1_401)).toBe(true);
    expect(s.hasSettled(Q, 1_000, 1_500)).toBe(true);
    expect(s.hasSettled(undefined, 1_000, 1_500)).toBe(true);
    // A later broadcast naming P is not covered until it is seen too.
    s.accepted(id(2), [P], 2_000);
    expect(s.hasSettled(P, 2_000, 2_100)).toBe(false);
    expect(s.hasSettled(undefined, 2_000, 2_100)).toBe(false);
    s.seen([id(2)], 2_300);
    expect(s.hasSettled(P, 2_000, 2_301)).toBe(true);
  });

  it('waits for every broadcast naming the principal, not only the latest', () => {
    const s = new BroadcastSettling(SETTLE);
    s.accepted(id(1), [P], 1_000);
    s.accepted(id(2), [P], 1_100);
    s.seen([id(2)], 1_300);
    expect(s.hasSettled(P, 1_100, 1_400)).toBe(false);
    s.seen([id(1)], 1_600);
    expect(s.hasSettled(P, 1_100, 1_601)).toBe(true);
  });

  it('never settles what could not be looked for: a broadcast without an id blocks its principals and the global settling for its window', () => {
    const s = new BroadcastSettling(SETTLE);
    s.accepted(id(1), [P], 1_000);
    s.accepted(undefined, [P], 1_050);
    s.seen([id(1)], 1_200);
    expect(s.hasSettled(P, 1_050, 1_300)).toBe(false);
    expect(s.hasSettled(undefined, 1_050, 1_300)).toBe(false);
    expect(s.hasSettled(P, 1_050, 4_051)).toBe(true); // after the untracked one's window
    // Every principal (an unknown sender): what settled before is forgotten.
    s.accepted(id(3), [Q], 5_000);
    s.seen([id(3)], 5_100);
    expect(s.hasSettled(Q, 5_000, 5_200)).toBe(true);
    s.poison(undefined, 5_300);
    expect(s.hasSettled(Q, 5_000, 5_200)).toBe(false);
  });

  it('takes a broadcast that left its window unseen (mined between polls, dropped) as one it cannot vouch for', () => {
    const s = new BroadcastSettling(SETTLE);
    s.accepted(id(1), [P], 1_000);
    s.accepted(id(2), [P], 1_500);
    s.seen([id(2)], 4_100); // id(1) expires unseen here
    expect(s.hasSettled(P, 1_500, 1_600)).toBe(false);
    expect(s.hasSettled(P, 1_500, 4_101)).toBe(true);
  });

  it('ignores ids that are not transaction ids, and bounds what it tracks', () => {
    const s = new BroadcastSettling(SETTLE, 1);
    s.accepted('not-a-txid', [P], 1_000);
    s.seen(['not-a-txid'], 1_100);
    expect(s.hasSettled(P, 1_000, 1_200)).toBe(false);
    const t = new BroadcastSettling(SETTLE, 1);
    t.accepted(id(1), [P], 1_000);
    t.accepted(id(2), [Q], 1_000); // over the bound: untracked
    t.seen([id(1), id(2)], 1_100);
    expect(t.hasSettled(P, 1_000, 1_200)).toBe(true);
    expect(t.hasSettled(Q, 1_000, 1_200)).toBe(false);
  });
});

describe('PrincipalActivity with settling', () => {
  const settings = { maxPrincipals: 100, settleMs: SETTLE, coinbaseWindowBlocks: 0, watchMs: 10_000, lagBlocks: 0 };

  it('keeps an answer validated after the watcher saw the broadcast, where the settle window alone would not', () => {
    const activity = new PrincipalActivity(settings);
    activity.recordBroadcast([P], 1_000, { senders: [P], listed: [P] }, id(7));
    expect(activity.principalChangedAfter(P, 999)).toBe(true);
    expect(activity.principalChangedAfter(P, 1_500)).toBe(true);
    activity.mempoolPolled({ kind: 'changed', principals: [P], senders: [P], listed: [P], seenTxIds: [`0x${id(7)}`], startedAt: 1_600, endedAt: 1_650 });
    // Validated before the poll's answer: the watcher's own mark and the settling both say changed.
    expect(activity.principalChangedAfter(P, 1_640)).toBe(true);
    expect(activity.principalChangedAfter(P, 1_700)).toBe(false);
    expect(activity.principalChangedAfter(P, 1_700, 'sent_transactions')).toBe(false);
    expect(activity.mempoolChangedAfter(1_700)).toBe(false);
    // Without an id (another instance's announcement), the window stands.
    activity.recordBroadcast([P], 5_000);
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 5_100, endedAt: 5_150 });
    expect(activity.principalChangedAfter(P, 5_200)).toBe(true);
    expect(activity.principalChangedAfter(P, 8_001)).toBe(false);
  });
});
