/**
 * What the proxy does with a broadcast it forwarded (issue 15, "broadcast-aware"): when the
 * upstream accepted it (200), the principals it names (chain/broadcast-principals.ts) and the
 * global mempool are marked changed in the activity registry at once, before the client sees the
 * answer, so the sender's next nonce read goes to the upstream; and the touch is announced to the
 * other instances sharing Redis (cache/activity-announcements.ts). A body that cannot be read
 * (undecodable, over the node's size, cut short) or a broadcast whose answer never came (it may
 * have been accepted) is treated conservatively: when its principals cannot be read, its sender
 * could be anyone, so every principal and the whole mempool count as changed (and that is
 * announced); for an answer that never came but a body that decodes, its principals.
 */
import { decodeBroadcast } from '../chain/broadcast-principals.js';
import type { PrincipalActivity } from '../chain/activity.js';
import type { Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { BroadcastSink } from './passthrough.js';

/**
 * A touch to tell the other instances of: principals, or null for "a broadcast whose principals
 * are unknown: every one changed". Settles once told (or failing to), never rejects.
 */
export type AnnounceTouch = (principals: readonly string[] | null) => Promise<void>;

export function createBroadcastObserver(deps: { activity: PrincipalActivity; clock: Clock; telemetry: Telemetry; announce?: AnnounceTouch }): BroadcastSink {
  return {
    observe(body, contentType, status) {
      // A refusal (4xx: bad nonce, fee, signature…) changed nothing upstream.
      if (status !== undefined && status !== 200) {
        deps.telemetry.broadcastObserved('rejected');
        return;
      }
      const names = body === undefined ? undefined : decodeBroadcast(body, contentType);
      const principals = names?.principals;
      const at = deps.clock();
      if (names) deps.activity.recordBroadcast(names.principals, at, names.roles, names.txId);
      else deps.activity.recordUnknownBroadcast(at);
      deps.telemetry.broadcastObserved(principals ? 'decoded' : 'undecodable', status === undefined ? 'no answer from the upstream' : undefined);
      // The client's answer waits for the announcement (bounded, passthrough-forward.ts): a wallet
      // that reads its nonce through another instance right after then finds that instance told.
      return deps.announce?.(principals ?? null);
    },
  };
}
