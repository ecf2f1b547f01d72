/**
 * Helpers for tests of learned freshness through the surface upstream: mine one block holding a
 * chosen transaction, then poll the proxy's tip and wait until its block learner had its say.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { signTransfer, tipOf, type SurfaceUpstream } from '../../testkit/surface-upstream/index.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { metricValue } from './proxy-harness.js';

/** Mines one block holding `raw` (a signed transaction the upstream accepts); whether it began a new burn block. */
export function mineWith(upstream: SurfaceUpstream, raw: string): boolean {
  const answer = upstream.broadcast(raw);
  expect(answer.status).toBe(200);
  const burnBefore = tipOf(upstream.current()).burnHeight;
  upstream.mine();
  return tipOf(upstream.current()).burnHeight !== burnBefore;
}

/** Mines one block holding a transfer from the first bot to `recipient`; whether it began a new burn block. */
export async function mineTransferTo(upstream: SurfaceUpstream, recipient: string): Promise<boolean> {
  const bot = upstream.cast.bots[0]!;
  const nonce = upstream.current().accounts.get(bot.address)?.nonce ?? 0;
  return mineWith(upstream, await signTransfer(bot, recipient, 1_000n, nonce, 300n));
}

/** Polls the tip and waits until the learner has had its say about the new tip (learned or not). */
export async function pollAndLearn(proxy: ProxyServer): Promise<'learned' | 'not learned'> {
  const before = await metricValue(proxy, 'stacks_proxy_activity_blocks_total');
  const learnedBefore = await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'learned' });
  await proxy.tracker.pollOnce();
  for (let i = 0; i < 200 && (await metricValue(proxy, 'stacks_proxy_activity_blocks_total')) === before; i++) await sleep(10);
  // An outcome counted for the tip; a learned block may need its transactions read first.
  for (let i = 0; i < 50 && (await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'learned' })) === learnedBefore; i++) await sleep(10);
  return (await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'learned' })) > learnedBefore ? 'learned' : 'not learned';
}
