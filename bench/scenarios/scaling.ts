/**
 * Scenario 6: the memory-hit workload on one proxy process and on two (one per core, each its
 * own autocannon target with half the connections), to show what a second process buys here.
 */
import { stopChild } from '../../testkit/index.js';
import { alternate } from '../lib/load.js';
import { HAS_TASKSET, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Section } from '../lib/report.js';
import { HIT_PATH, type Context } from './context.js';

export async function scaling({ options, upstream }: Context): Promise<Section> {
  const servers: Server[] = [];
  try {
    const [first, second] = await Promise.all([startProxy({ upstreamUrl: upstream.url, cpu: 0 }), startProxy({ upstreamUrl: upstream.url, cpu: 1 })]);
    servers.push(first, second);
    for (const p of servers) await fetch(p.url + HIT_PATH).then((r) => r.arrayBuffer());
    const target = (s: Server) => ({ url: s.url + HIT_PATH, pids: [s.pid] });
    const runs = await alternate('scaling', { one: [target(first)], two: [target(first), target(second)] }, options);
    const s = '6 scaling';
    const gain = ratio(runs.two?.requestsPerSecond, runs.one?.requestsPerSecond);
    return {
      id: 'scaling',
      rows: [
        { scenario: s, name: 'one proxy process (CPU 0)', run: runs.one },
        { scenario: s, name: 'two proxy processes (CPU 0 and CPU 1)', run: runs.two, baseline: runs.one, note: 'RSS: both processes' },
      ],
      findings: [
        `Scaling: two processes give ${gain}x the req/s of one. This machine has 2 cores and ${HAS_TASKSET ? 'the second process shares CPU 1 with the load generator' : 'nothing is pinned'}, ` +
          'so this understates what a second core buys on a machine where the clients are elsewhere; on N dedicated cores expect close to N times one process (the hit path shares nothing between processes).',
      ],
      data: { runs },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}
