/** The warm-up's memory of what clients asked (src/live/hot-urls.ts): templates, bounds, decay, credentials. */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HotUrls, instantiate, templateOf } from '../../src/live/hot-urls.js';
import type { ChainTip } from '../../src/chain/view.js';

const HASH = (c: string) => `0x${c.repeat(64)}`;
const TIP: ChainTip = { height: 1234, indexBlockHash: HASH('a'), blockHash: HASH('b'), burnHeight: 870001 };
const NEXT: ChainTip = { height: 1235, indexBlockHash: HASH('c'), blockHash: HASH('d'), burnHeight: 870002 };

const request = (url: string, headers: Record<string, string> = {}, method = 'GET') => ({ url, method, headers }) as unknown as IncomingMessage;

describe('templateOf / instantiate', () => {
  it('names the tip by whole path segments only, and fills in the next tip', () => {
    const cases: Array<[string, string]> = [
      ['/extended/v2/blocks/1234', '/extended/v2/blocks/1235'],
      [`/extended/v2/blocks/${HASH('A')}/transactions?limit=20&offset=0`, `/extended/v2/blocks/${HASH('c')}/transactions?limit=20&offset=0`],
      [`/extended/v2/blocks/${HASH('b')}`, `/extended/v2/blocks/${HASH('d')}`],
      ['/extended/v1/block/by_burn_block_height/870001', '/extended/v1/block/by_burn_block_height/870002'],
    ];
    for (const [url, next] of cases) {
      const template = templateOf(url, TIP);
      expect(template.templated, url).toBe(true);
      expect(instantiate(template.url, NEXT), url).toBe(next);
    }
    // Part of a segment, or in the query: left as asked.
    for (const url of ['/extended/v2/blocks/12345', '/extended/v1/address/SP1/transactions?height=1234', '/extended/v2/blocks/latest']) {
      expect(templateOf(url, TIP)).toEqual({ url, templated: false });
    }
    // A tip that lacks a slot (no block hash) fills nothing.
    expect(instantiate('/extended/v2/blocks/{block_hash}', { height: 1, indexBlockHash: HASH('e'), burnHeight: 0 })).toBeUndefined();
  });
});

describe('HotUrls', () => {
  it('keeps the most asked first, halves counts on each tip and forgets what was asked once', () => {
    const hot = new HotUrls(2, () => TIP);
    for (let i = 0; i < 5; i++) hot.record(request('/a'));
    for (let i = 0; i < 3; i++) hot.record(request('/extended/v2/blocks/1234'));
    hot.record(request('/c'));
    expect(hot.rotate().map((h) => [h.url, h.count, h.templated])).toEqual([
      ['/a', 5, false],
      ['/extended/v2/blocks/{height}', 3, true],
    ]);
    expect(hot.size).toBe(2); // /c (1) is gone, /a is 2, the block 1
    expect(hot.rotate().map((h) => h.count)).toEqual([2, 1]);
  });

  it('never keeps credentials, writes, long URLs, or more than four times the URLs it warms', () => {
    const hot = new HotUrls(1, () => TIP);
    hot.record(request('/x', { authorization: 'Bearer t' }));
    hot.record(request('/x', { 'x-api-key': 'k' }));
    hot.record(request('/x', {}, 'POST'));
    hot.record(request(`/${'y'.repeat(1100)}`));
    expect(hot.size).toBe(0);
    for (let i = 0; i < 10; i++) hot.record(request(`/u${i}`));
    expect(hot.size).toBe(4);
    hot.record(request('/u9')); // not kept while full
    expect(hot.rotate()).toHaveLength(1);
    expect(hot.size).toBe(0); // every count was 1
  });

  it('keeps nothing with live.warm.hotUrls 0 or before a tip is known', () => {
    const none = new HotUrls(0, () => TIP);
    none.record(request('/a'));
    expect(none.size).toBe(0);
    const early = new HotUrls(4, () => undefined);
    early.record(request('/a'));
    expect(early.size).toBe(0);
  });
});
