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

/**
 * A principal as an announcement may carry it: an address, or address.contract with a contract
 * name of up to 128 characters (stacks-core's ContractName, which the 13 routes accept too).
 */
const PRINCIPAL = /^S[0-9A-Z]{27,40}(?:\.[a-zA-Z][a-zA-Z0-9_-]{0,127})?$/;
/**
 * Principals per message at most (bounded parsing). A broadcast naming more (post-conditions
 * can name many) is split across messages by the sender, origin and sponsor in the first; a
 * receiver that still gets a longer or partly unreadable list applies what it can read and
 * counts every principal as changed, never drops the message (and with it the sender).
 */
export const MAX_PRINCIPALS_PER_MESSAGE = 64;

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
   * Tells the peers; settles once Redis took every message (it has then written them to every
   * subscriber). A failure is counted and logged, never thrown (the local registry has it).
   * `principals` come origin (and sponsor) first (broadcast-principals.ts): the first message
   * carries them, the rest follow in messages of at most MAX_PRINCIPALS_PER_MESSAGE.
   */
  announce(principals: readonly string[] | null): Promise<void> {
    const sent: Promise<void>[] = [];
    for (const chunk of principals === null ? [null] : chunks(principals, MAX_PRINCIPALS_PER_MESSAGE)) {
      const message: Announcement = { from: this.id, principals: chunk };
      this.deps.telemetry.activityAnnounced('sent');
      sent.push(
        this.deps
          .publish(activityChannelName(this.deps.keyPrefix), JSON.stringify(message))
          .catch((error: unknown) => this.deps.telemetry.storeError('redis', 'publish', error)),
      );
    }
    return Promise.all(sent).then(() => undefined);
  }

  /** A message from the channel: a peer's broadcast, applied to this registry. Anything malformed is ignored (counted). */
  apply(message: string): void {
    let announcement: Announcement;
    try {
      announcement = JSON.parse(message) as Announcement;
      const principals = announcement?.principals;
      const valid = typeof announcement?.from === 'string' && (principals === null || Array.isArray(principals));
      if (!valid) throw new Error('not an activity announcement');
    } catch (error) {
      this.deps.telemetry.storeError('redis', 'activity-message', error);
      return;
    }
    if (announcement.from === this.id) return;
    const at = this.deps.clock();
    const listed = announcement.principals;
    // What can be read is applied; a list longer than the bound or with an entry that is not a
    // principal may hide the sender: then everyone counts as changed (stricter, never looser).
    const readable = listed === null ? [] : listed.slice(0, MAX_PRINCIPALS_PER_MESSAGE).filter((p): p is string => typeof p === 'string' && PRINCIPAL.test(p));
    if (listed === null || readable.length < listed.length) {
      if (listed !== null) this.deps.telemetry.storeError('redis', 'activity-message', new Error('activity announcement partly unreadable'));
      this.deps.activity.recordUnknownBroadcast(at);
    }
    if (readable.length > 0) this.deps.activity.recordBroadcast(readable, at);
    this.received += 1;
    this.deps.telemetry.activityAnnounced('received');
  }
}

function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  if (items.length === 0) yield [];
  for (let start = 0; start < items.length; start += size) yield items.slice(start, start + size);
}
