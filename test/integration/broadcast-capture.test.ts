/**
 * Broadcast bodies kept to decode (issue 15, broadcast-aware invalidation) are held under one
 * process-wide budget (activity.broadcastCaptureBudgetBytes): many slow, unfinished broadcasts
 * hold no more than the budget in all, the ones beyond it stream on uncaptured, and the upstream
 * receives every byte of every one of them either way. Through real HTTP, with the bodies sent
 * all but their last byte and held there.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { waitFor } from '../../testkit/index.js';
import { startActivityUpstream, type ActivityUpstream } from '../support/activity-upstream.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const BUDGET = 1_000_000;
const BODY_BYTES = 300_000;
const SENDERS = 12;

/** A POST /v2/transactions that sends all of `body` but its last byte, and the rest on `finish()`. */
function partialBroadcast(url: string, body: Buffer, chunked = false): { finish: () => void; answer: Promise<number> } {
  let req!: ClientRequest;
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (!chunked) headers['content-length'] = String(body.length);
  const answer = new Promise<number>((resolve, reject) => {
    req = request(`${url}/v2/transactions`, { method: 'POST', headers }, (res: IncomingMessage) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
  });
  req.write(body.subarray(0, body.length - 1));
  return { finish: () => req.end(body.subarray(body.length - 1)), answer };
}

describe('the broadcast capture budget', () => {
  let upstream: ActivityUpstream;
  let proxy: ProxyServer;
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    upstream.acceptUndecodable = true;
    proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { activity: { broadcastCaptureBudgetBytes: BUDGET } } });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });

  it('holds at most the budget for many unfinished broadcasts, streams the rest on uncaptured, and the upstream gets every byte', async () => {
    const bodies = Array.from({ length: SENDERS }, (_, i) => Buffer.alloc(BODY_BYTES, 0x41 + i));
    const sent = bodies.map((body) => partialBroadcast(proxy.url, body));
    // Every body but its last byte has reached the upstream: the uncaptured ones were not held back.
    await waitFor(async () => upstream.broadcastBytesSoFar === SENDERS * (BODY_BYTES - 1), {
      timeoutMs: 20_000,
      what: 'the upstream to receive every body but its last byte',
    });

    const capture = proxy.broadcastCapture;
    expect(capture).toBeDefined();
    expect(capture?.held).toBeGreaterThan(0);
    expect(capture?.held).toBeLessThanOrEqual(BUDGET);
    expect(capture?.peak).toBeLessThanOrEqual(BUDGET);
    // 12 bodies of 300 kB against 1 MB: 3 captured, 9 streamed on uncaptured.
    expect(capture?.overBudget).toBe(SENDERS - Math.floor(BUDGET / BODY_BYTES));
    expect(await metricValue(proxy, 'stacks_proxy_broadcast_captures_over_budget_total')).toBe(SENDERS - Math.floor(BUDGET / BODY_BYTES));

    for (const broadcast of sent) broadcast.finish();
    expect(await Promise.all(sent.map((s) => s.answer))).toEqual(Array.from({ length: SENDERS }, () => 200));
    // Every body arrived whole, captured or not.
    expect(upstream.broadcasts.map((b) => b.toString('latin1')).sort()).toEqual(bodies.map((b) => b.toString('latin1')).sort());
    // Each was accepted and none could be read: every one counted as undecodable, and the budget is free again.
    expect(await metricValue(proxy, 'stacks_proxy_broadcasts_observed_total', { outcome: 'undecodable' })).toBe(SENDERS);
    await waitFor(async () => capture?.held === 0, { timeoutMs: 5_000, what: 'the capture budget to be given back' });
  });

  it('holds at most the budget for chunked bodies too (charged as they stream), and the upstream gets every byte', async () => {
    const before = { bytes: upstream.broadcastBytesSoFar, bodies: upstream.broadcasts.length, over: proxy.broadcastCapture?.overBudget ?? 0 };
    const bodies = Array.from({ length: SENDERS }, (_, i) => Buffer.alloc(BODY_BYTES, 0x61 + i));
    const sent = bodies.map((body) => partialBroadcast(proxy.url, body, true));
    await waitFor(async () => upstream.broadcastBytesSoFar - before.bytes === SENDERS * (BODY_BYTES - 1), {
      timeoutMs: 20_000,
      what: 'the upstream to receive every body but its last byte',
    });
    const capture = proxy.broadcastCapture;
    expect(capture?.held).toBeLessThanOrEqual(BUDGET);
    expect(capture?.peak).toBeLessThanOrEqual(BUDGET);
    expect((capture?.overBudget ?? 0) - before.over).toBeGreaterThanOrEqual(SENDERS - Math.floor(BUDGET / BODY_BYTES));
    for (const broadcast of sent) broadcast.finish();
    expect(await Promise.all(sent.map((s) => s.answer))).toEqual(Array.from({ length: SENDERS }, () => 200));
    expect(
      upstream.broadcasts
        .slice(before.bodies)
        .map((b) => b.toString('latin1'))
        .sort(),
    ).toEqual(bodies.map((b) => b.toString('latin1')).sort());
    await waitFor(async () => capture?.held === 0, { timeoutMs: 5_000, what: 'the capture budget to be given back' });
  });
});
