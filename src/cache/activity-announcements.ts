/**
 * Broadcast touches shared between the instances that share a Redis (issue 15): an instance
 * that forwarded an accepted broadcast announces the principals it named on a channel beside
 * the purge channel; every other instance marks them changed in its own activity registry when
 * the message arrives (with its own clock, at receipt: later than the broadcast, so stricter).
 * Without the message an instance would serve the sender's old nonce from its memory tier until
 * its mempool TTL ran out.
 */
import { randomUUID } from 'node:crypto';
import type { PrincipalActivity } from '../chain/activity.js';
import type { Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** The channel's name for a key prefix: instances share it exactly when they share keys (as the purge channel). */
export const activityChannelName = (keyPrefix: string): string => `${keyPrefix}:activity`;

/** A principal as an announcement may carry it: an address, or address.contract (bounded). */
const PRINCIPAL = /^S[0-9A-Z]{27,40}(?:\.[a-zA-Z][a-zA-Z0-9_-]{0,39})?$/;
/** A broadcast names a handful of principals; a message naming more is not one of ours. */
const MAX_PRINCIPALS = 64;

interface Announcement {
  from: string;
  /** null: the mempool changed, principals unknown. */
  principals: string[] | null;
}

export class ActivityAnnouncements {
  /** This instance, so that it skips its own messages. */
  private readonly id = randomUUID();
  /** Touches announced by peers and applied here. */
  received = 0;

  constructor(
    private readonly deps: {
      activity: PrincipalActivity;
      publish: (channel: string, message: string) => Promise<void>;
      keyPrefix: string;
      clock: Clock;
      telemetry: Telemetry;
    },
  ) {}

  /**
   * Tells the peers; settles once Redis took the message (it has then written it to every
   * subscriber). A failure is counted and logged, never thrown (the local registry has it).
   */
  announce(principals: readonly string[] | null): Promise<void> {
    const message: Announcement = { from: this.id, principals: principals === null ? null : [...principals] };
    this.deps.telemetry.activityAnnounced('sent');
    return this.deps.publish(activityChannelName(this.deps.keyPrefix), JSON.stringify(message)).catch((error: unknown) => this.deps.telemetry.storeError('redis', 'publish', error));
  }

  /** A message from the channel: a peer's broadcast, applied to this registry. Anything malformed is ignored (counted). */
  apply(message: string): void {
    let announcement: Announcement;
    try {
      announcement = JSON.parse(message) as Announcement;
      const principals = announcement?.principals;
      const valid =
        typeof announcement?.from === 'string' &&
        (principals === null || (Array.isArray(principals) && principals.length <= MAX_PRINCIPALS && principals.every((p) => typeof p === 'string' && PRINCIPAL.test(p))));
      if (!valid) throw new Error('not an activity announcement');
    } catch (error) {
      this.deps.telemetry.storeError('redis', 'activity-message', error);
      return;
    }
    if (announcement.from === this.id) return;
    const at = this.deps.clock();
    if (announcement.principals === null) this.deps.activity.recordMempoolChange(at);
    else this.deps.activity.recordBroadcast(announcement.principals, at);
    this.received += 1;
    this.deps.telemetry.activityAnnounced('received');
  }
}
