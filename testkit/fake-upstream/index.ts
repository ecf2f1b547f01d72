/**
 * A fake Stacks Blockchain API for tests, the demo, the dashboard check and the bench: a real
 * node:http server on 127.0.0.1 that replays the recorded regtest answers (see ../fixtures.ts)
 * byte for byte and models the chain tip, blocks, transactions and mempool, so that callers can
 * simulate time (new blocks, reorgs, mempool changes) and faults (delays, error statuses,
 * resets, hangs, garbage).
 *
 * Its parts, one job each: server.ts (sockets, request log, WebSocket echo), dispatch.ts (which
 * answer a request gets), routes.ts (the route table), chain.ts with recorded-chain.ts and
 * bodies.ts (the chain model and its JSON), chain-replies.ts (answers computed from the chain),
 * replay.ts (answers replayed from the recordings), replies.ts and respond.ts (building and
 * writing answers), faults.ts (injected delays and failures), holds.ts (answers held until the test
 * releases them).
 *
 * Section numbers (§) refer to shared/spec/upstream-contract.md.
 */
import { FakeUpstreamServer } from './server.js';
import type { FakeUpstream, FakeUpstreamOptions } from './types.js';

export type { AttachedChannel, FailureMode, FakeUpstream, FakeUpstreamOptions, RecordedRequest } from './types.js';
export type { HeldAnswers } from './holds.js';

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const fake = new FakeUpstreamServer(opts.principalEtags, opts.rpcChannel);
  await fake.listen(opts.port ?? 0);
  return fake;
}
