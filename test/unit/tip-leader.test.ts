/** One tip poll per host in worker mode: its pure parts (which worker leads, which poll is news, the worker's share of it). */
import { describe, expect, it } from 'vitest';
import { chooseTipLeader } from '../../src/cluster/tip-leader.js';
import { TipNewsRule } from '../../src/chain/tip-news.js';
import { WorkerTipShare } from '../../src/cluster/worker-tip-share.js';
import { isMempoolNews, isTipNews, MAX_NEWS_PRINCIPALS } from '../../src/cluster/messages.js';
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
    const tipShare = new WorkerTipShare((message) => (sent.push(message), true));
    const handlers = {
      lead: () => calls.push('lead'),
      pollNow: (origin: string) => calls.push(`poll ${origin}`),
      mempool: (named: Set<string>) => principals.push([...named]),
    };
    return { tipShare, handlers, sent, calls, principals };
  }

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
