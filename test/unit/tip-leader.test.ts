/** One tip poll per host in worker mode: its pure parts (which worker leads, which poll is news, the worker's share of it). */
import { describe, expect, it, vi } from 'vitest';
import { chooseTipLeader } from '../../src/cluster/tip-leader.js';
import { TipNewsRule } from '../../src/chain/tip-news.js';
import { WorkerTipShare } from '../../src/cluster/worker-tip-share.js';
import { LEADER_WORD_WAIT_MS, WorkerBlockLearning } from '../../src/cluster/worker-block-learning.js';
import { isBlockLearnedNews, isMempoolNews, isMempoolPollNews, isTipNews, MAX_LEARNED_PRINCIPALS, MAX_NEWS_PRINCIPALS } from '../../src/cluster/messages.js';
import type { MempoolPoll } from '../../src/chain/activity.js';
import type { ChainTip } from '../../src/chain/view.js';

describe('chooseTipLeader', () => {
  it('no ready worker: none leads', () => {
    expect(chooseTipLeader(undefined, [])).toBeUndefined();
    expect(chooseTipLeader(2, [])).toBeUndefined();
  });

  it('none yet: the lowest ready id', () => {
    expect(chooseTipLeader(undefined, [3, 1, 2])).toBe(1);
  });

  it('a ready leader stays the leader, even when a lower id is ready (never demoted)', () => {
    expect(chooseTipLeader(2, [1, 2, 3])).toBe(2);
  });

  it('a leader gone: the lowest ready id of the rest', () => {
    expect(chooseTipLeader(1, [4, 3])).toBe(3);
  });
});

const tip = (height: number, hash = `0x${String(height).padStart(64, '0')}`): ChainTip => ({ height, indexBlockHash: hash, burnHeight: height + 100 });

describe('TipNewsRule', () => {
  it("an upstream's first answer is news", () => {
    expect(new TipNewsRule().isNews('a', tip(5), tip(5))).toBe(true);
  });

  it('the believed tip answered again is no news; a new block is', () => {
    const rule = new TipNewsRule();
    rule.isNews('a', tip(5), tip(5));
    expect(rule.isNews('a', tip(5), tip(5))).toBe(false);
    expect(rule.isNews('a', tip(6), tip(6))).toBe(true);
    expect(rule.isNews('a', tip(6), tip(6))).toBe(false);
  });

  it('an answer other than the believed tip is news every time (a held jump walked, a lagging upstream)', () => {
    const rule = new TipNewsRule();
    rule.isNews('a', tip(900), tip(5));
    expect(rule.isNews('a', tip(900), tip(5))).toBe(true);
    expect(rule.isNews('a', tip(900), undefined)).toBe(true);
  });

  it('judges each upstream by its own previous answer, hashes in any case', () => {
    const rule = new TipNewsRule();
    rule.isNews('a', tip(5, '0xAB'), tip(5, '0xab'));
    expect(rule.isNews('a', tip(5, '0xab'), tip(5, '0xAB'))).toBe(false);
    expect(rule.isNews('b', tip(5, '0xab'), tip(5, '0xab'))).toBe(true);
  });
});

describe('WorkerTipShare', () => {
  function share() {
    const sent: unknown[] = [];
    const calls: string[] = [];
    const principals: string[][] = [];
    const polls: MempoolPoll[] = [];
    const tipShare = new WorkerTipShare((message) => (sent.push(message), true));
    const handlers = {
      lead: () => calls.push('lead'),
      pollNow: (origin: string) => calls.push(`poll ${origin}`),
      mempool: (named: Set<string>) => principals.push([...named]),
      mempoolPolled: (poll: MempoolPoll) => polls.push(poll.kind === 'changed' ? { ...poll, principals: [...poll.principals] } : poll),
    };
    return { tipShare, handlers, sent, calls, principals, polls };
  }
  const pollNews = (leaderId: string, seq: number, kind: 'unchanged' | 'changed' | 'unknown', principals: string[] = []) => ({
    type: 'scp:mempool-poll',
    leaderId,
    seq,
    kind,
    principals,
    startedAt: 1000 + seq,
    endedAt: 1010 + seq,
  });

  it("the leader sends each poll of its watcher, numbered; a poll naming more than a notice carries goes as 'unknown'", () => {
    const { tipShare, handlers, sent } = share();
    tipShare.attach(handlers);
    tipShare.mempoolPolled({ kind: 'unchanged', startedAt: 1, endedAt: 2 });
    expect(sent).toEqual([]); // a follower's watcher does not run; were it asked, nothing is sent
    tipShare.received({ type: 'scp:tip-lead' });
    tipShare.mempoolPolled({ kind: 'unknown', startedAt: 1, endedAt: 2 });
    tipShare.mempoolPolled({ kind: 'changed', principals: new Set(['SP1']), startedAt: 3, endedAt: 4 });
    tipShare.mempoolPolled({ kind: 'changed', principals: Array.from({ length: MAX_NEWS_PRINCIPALS + 1 }, (_, i) => `SP${i}`), startedAt: 5, endedAt: 6 });
    expect(sent.every(isMempoolPollNews)).toBe(true);
    const news = sent as Array<{ leaderId: string; seq: number; kind: string; principals: string[]; startedAt: number }>;
    expect(news.map((m) => [m.seq, m.kind, m.principals.length, m.startedAt])).toEqual([
      [1, 'unknown', 0, 1],
      [2, 'changed', 1, 3],
      [3, 'unknown', 0, 5],
    ]);
    expect(new Set(news.map((m) => m.leaderId)).size).toBe(1);
  });

  it("a follower takes the leader's polls as its own watcher's, but a poll after one it did not hear, or from a new watcher, as 'unknown'", () => {
    const { tipShare, handlers, polls } = share();
    tipShare.attach(handlers);
    tipShare.received(pollNews('a', 5, 'unchanged')); // the first it hears: it missed 1 to 4
    tipShare.received(pollNews('a', 6, 'unchanged'));
    tipShare.received(pollNews('a', 7, 'changed', ['SP1']));
    tipShare.received(pollNews('a', 9, 'changed', ['SP2'])); // 8 was lost
    tipShare.received(pollNews('b', 1, 'unchanged')); // a new leader's watcher
    tipShare.received(pollNews('b', 2, 'unchanged'));
    expect(polls).toEqual([
      { kind: 'unknown', startedAt: 1005, endedAt: 1015 },
      { kind: 'unchanged', startedAt: 1006, endedAt: 1016 },
      { kind: 'changed', principals: ['SP1'], startedAt: 1007, endedAt: 1017 },
      { kind: 'unknown', startedAt: 1009, endedAt: 1019 },
      { kind: 'unknown', startedAt: 1001, endedAt: 1011 },
      { kind: 'unchanged', startedAt: 1002, endedAt: 1012 },
    ]);
  });

  it('polls relayed before the core is attached are applied in order when it is; too many collapse into one unknown', () => {
    const first = share();
    first.tipShare.received(pollNews('a', 1, 'unknown'));
    first.tipShare.received(pollNews('a', 2, 'changed', ['SP1']));
    first.tipShare.attach(first.handlers);
    expect(first.polls.map((p) => p.kind)).toEqual(['unknown', 'changed']);
    const flooded = share();
    for (let seq = 1; seq <= 70; seq++) flooded.tipShare.received(pollNews('a', seq, 'unchanged'));
    flooded.tipShare.attach(flooded.handlers);
    expect(flooded.polls).toEqual([
      { kind: 'unknown', startedAt: 1065, endedAt: 1075 },
      ...Array.from({ length: 5 }, (_, i) => ({ kind: 'unchanged', startedAt: 1066 + i, endedAt: 1076 + i })),
    ]);
  });

  it('a malformed mempool poll notice is not one', () => {
    expect(isMempoolPollNews(pollNews('a', 1, 'unchanged'))).toBe(true);
    expect(isMempoolPollNews({ ...pollNews('a', 1, 'unchanged'), seq: 0 })).toBe(false);
    expect(isMempoolPollNews({ ...pollNews('a', 1, 'unchanged'), kind: 'gone' })).toBe(false);
    expect(isMempoolPollNews({ ...pollNews('a', 1, 'unchanged'), startedAt: Number.NaN })).toBe(false);
    expect(isMempoolPollNews({ ...pollNews('a', 1, 'changed'), principals: [''] })).toBe(false);
    expect(isMempoolPollNews({ ...pollNews('', 1, 'unchanged') })).toBe(false);
  });

  it('a follower sends no news; it polls on the news the primary relays', () => {
    const { tipShare, handlers, sent, calls, principals } = share();
    tipShare.attach(handlers);
    tipShare.tipNews('http://a');
    tipShare.mempoolNews(['SP1']);
    expect(sent).toEqual([]);
    tipShare.received({ type: 'scp:tip-news', origin: 'http://a' });
    tipShare.received({ type: 'scp:mempool-news', principals: ['SP1', 'SP2'] });
    tipShare.received({ type: 'scp:flight', id: 1, result: 'lead' });
    expect(calls).toEqual(['poll http://a']);
    expect(principals).toEqual([['SP1', 'SP2']]);
    expect(tipShare.isLeader).toBe(false);
  });

  it('news before the core is attached is acted on when it is; so is a lead', () => {
    const { tipShare, handlers, calls, principals } = share();
    tipShare.received({ type: 'scp:tip-news', origin: 'http://a' });
    tipShare.received({ type: 'scp:mempool-news', principals: ['SP1'] });
    tipShare.received({ type: 'scp:tip-lead' });
    expect(calls).toEqual([]);
    tipShare.attach(handlers);
    expect(calls).toEqual(['poll http://a', 'lead']);
    expect(principals).toEqual([['SP1']]);
    expect(tipShare.isLeader).toBe(true);
  });

  it('the leader leads once and sends its news, principals in slices a notice may carry', () => {
    const { tipShare, handlers, sent, calls } = share();
    tipShare.attach(handlers);
    tipShare.received({ type: 'scp:tip-lead' });
    tipShare.received({ type: 'scp:tip-lead' });
    expect(calls).toEqual(['lead']);
    tipShare.tipNews('http://a');
    const many = Array.from({ length: MAX_NEWS_PRINCIPALS + 1 }, (_, i) => `SP${i}`);
    tipShare.mempoolNews(many);
    expect(sent[0]).toEqual({ type: 'scp:tip-news', origin: 'http://a' });
    expect(sent.slice(1).map((m) => (m as { principals: string[] }).principals.length)).toEqual([MAX_NEWS_PRINCIPALS, 1]);
    expect(sent.every((m) => isTipNews(m) || isMempoolNews(m))).toBe(true);
  });

  it('detached (the core stopping): nothing is acted on or sent', () => {
    const { tipShare, handlers, sent, calls } = share();
    tipShare.attach(handlers);
    tipShare.detach();
    tipShare.received({ type: 'scp:tip-lead' });
    tipShare.received({ type: 'scp:tip-news', origin: 'http://a' });
    tipShare.tipNews('http://a');
    expect(calls).toEqual([]);
    expect(sent).toEqual([]);
  });

  it('refuses malformed news', () => {
    expect(isTipNews({ type: 'scp:tip-news' })).toBe(false);
    expect(isTipNews({ type: 'scp:tip-news', origin: 'x'.repeat(5_000) })).toBe(false);
    expect(isMempoolNews({ type: 'scp:mempool-news', principals: ['SP1', 3] })).toBe(false);
    expect(isMempoolNews({ type: 'scp:mempool-news', principals: Array(MAX_NEWS_PRINCIPALS + 1).fill('SP1') })).toBe(false);
  });
});

describe('WorkerBlockLearning: one block learner per host', () => {
  const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
  const tip = (height: number) => ({ height, indexBlockHash: hash(height), burnHeight: 700 });
  /** A worker's block learning, leading or not. */
  const learning = (leading: { now: boolean }, sent: unknown[] = []) =>
    new WorkerBlockLearning(
      (m) => (sent.push(m), true),
      () => leading.now,
    );
  const word = (height: number, principals: string[]) => ({
    type: 'scp:block-learned',
    block: tip(height),
    kind: 'known',
    principals,
    coinbaseRecipients: [],
    why: '',
    txIds: [hash(9)],
  });

  it('the leader sends what it learned; a poll it cannot carry whole goes as unknown; malformed ids are left out', () => {
    const sent: unknown[] = [];
    const leading = { now: false };
    const share = learning(leading, sent);
    expect(share.learnsItself()).toBe(false);
    share.learned(tip(5), { kind: 'known', principals: ['SP1'], coinbaseRecipients: [] }, [hash(1)]);
    expect(sent).toEqual([]); // not the leader: a follower's own learning stays its own
    leading.now = true;
    expect(share.learnsItself()).toBe(true);
    share.learned(tip(5), { kind: 'known', principals: new Set(['SP1', 'SP2']), coinbaseRecipients: ['SP3'] }, [hash(1), 'not-a-hash']);
    share.learned(tip(6), { kind: 'unknown', why: 'a page short' }, undefined);
    share.learned(tip(7), { kind: 'known', principals: Array.from({ length: MAX_LEARNED_PRINCIPALS + 1 }, (_, i) => `SP${i}`), coinbaseRecipients: [] }, []);
    expect(sent.every(isBlockLearnedNews)).toBe(true);
    expect(sent).toMatchObject([
      { block: tip(5), kind: 'known', principals: ['SP1', 'SP2'], coinbaseRecipients: ['SP3'], txIds: [hash(1)] },
      { block: tip(6), kind: 'unknown', why: 'a page short', principals: [] },
      { block: tip(7), kind: 'unknown', principals: [] },
    ]);
  });

  it("a follower's learner gets the leader's word whether it came before or after it asked", async () => {
    const share = learning({ now: false });
    share.received(word(5, ['SP1']));
    expect(await share.leaderLearned(tip(5))).toEqual({ touches: { kind: 'known', principals: ['SP1'], coinbaseRecipients: [] }, txIds: [hash(9)] });
    const waiting = share.leaderLearned(tip(6));
    share.received(word(6, ['SP2']));
    expect((await waiting)?.touches).toEqual({ kind: 'known', principals: ['SP2'], coinbaseRecipients: [] });
    share.received({ ...word(7, []), kind: 'unknown', why: 'cut by a cap' });
    expect((await share.leaderLearned(tip(7)))?.touches).toEqual({ kind: 'unknown', why: 'cut by a cap' });
  });

  it('no word within LEADER_WORD_WAIT_MS: undefined (the follower learns the block itself); detached: undefined at once', async () => {
    vi.useFakeTimers();
    try {
      const share = learning({ now: false });
      const waiting = share.leaderLearned(tip(8));
      vi.advanceTimersByTime(LEADER_WORD_WAIT_MS);
      expect(await waiting).toBeUndefined();
      share.received(word(8, ['SP1'])); // too late for that learner: kept for one that asks again
      const pending = share.leaderLearned(tip(9));
      share.detach();
      expect(await pending).toBeUndefined();
      expect(await share.leaderLearned(tip(10))).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a malformed block notice is not one', () => {
    expect(isBlockLearnedNews(word(5, ['SP1']))).toBe(true);
    expect(isBlockLearnedNews({ ...word(5, []), block: { ...tip(5), indexBlockHash: 'x' } })).toBe(false);
    expect(isBlockLearnedNews({ ...word(5, []), kind: 'maybe' })).toBe(false);
    expect(isBlockLearnedNews({ ...word(5, []), txIds: ['0x1'] })).toBe(false);
    expect(isBlockLearnedNews({ ...word(5, ['']) })).toBe(false);
  });
});
