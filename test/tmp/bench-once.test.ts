import { it } from 'vitest';
import { blockWarmup } from '../../bench/scenarios/block-warmup.js';
it('bench', async () => {
  const section = await blockWarmup({ options: { quick: process.env.Q === '1', rounds: 1, seconds: 1, connections: 10 } } as never);
  console.log(JSON.stringify(section, null, 1));
}, 600_000);
