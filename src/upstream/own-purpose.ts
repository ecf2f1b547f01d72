/**
 * Why the proxy itself asks the upstream something no client sent (issue 28: "the proxy's own
 * requests on a budget"): each such request is counted by purpose in
 * stacks_proxy_own_upstream_requests_total, so an operator can weigh what the proxy spends
 * against what its cache saves. A request a client's read causes (a miss, a revalidation, a
 * refresh behind a hit) is the client's, not counted here.
 *
 * The purpose travels with the work that causes the request: named on the request (`purpose`
 * on a getFrom), or, for reads that go through the read path (a contract's deploy evidence, the
 * warm-up of a new block), set around them with `asOwn`, which the upstream client reads when it
 * sends (AsyncLocalStorage: nothing on the hit path reads it). A read that joins a client's
 * flight already on its way sends nothing, and counts nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { OwnPurpose } from '../telemetry/own-purposes.js';

export type { OwnPurpose } from '../telemetry/own-purposes.js';

const current = new AsyncLocalStorage<OwnPurpose>();

/** Runs `work` as the proxy's own, for `purpose`: the upstream requests it sends are counted so. */
export function asOwn<T>(purpose: OwnPurpose, work: () => T): T {
  return current.run(purpose, work);
}

/** The purpose of the own work running now, if any. */
export function currentOwnPurpose(): OwnPurpose | undefined {
  return current.getStore();
}
