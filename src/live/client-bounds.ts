/**
 * Bounds every fanned-out client (JSON-RPC WebSocket and Socket.IO alike) is held to, pure and
 * shared by both channels: how many clients the process holds, how fast one client may send,
 * and whether one is too slow to keep (bytes waiting to be written past the limit: dropped,
 * never buffered without end).
 */

/** Clients held by both channels together; a slot is taken at the upgrade and given back at close. */
export class ClientSlots {
  private held = 0;
  constructor(private readonly max: number) {}

  /** Takes a slot; false when every slot is held (the upgrade gets 503). */
  take(): boolean {
    if (this.held >= this.max) return false;
    this.held += 1;
    return true;
  }

  release(): void {
    if (this.held > 0) this.held -= 1;
  }

  get count(): number {
    return this.held;
  }
}

/**
 * The longest topic a client may subscribe to, in characters, on either channel (the JSON-RPC
 * topic key `nft_asset_event:<asset_identifier>+<value>`, a Socket.IO room name). The upstream's
 * real topics are short: a principal is at most about 170 characters, an asset identifier
 * `<contract principal>::<name>` about 300, which leaves some 700 for an NFT value's Clarity hex.
 * Without a bound, one client could make the proxy (and the upstream) keep megabytes of topic
 * names; a longer topic is refused like a subscription over a limit, never held nor sent upstream.
 */
export const MAX_TOPIC_LENGTH = 1_024;

/** How many seconds' worth of messages a client may send at once before the rate applies. */
export const BURST_SECONDS = 10;

/**
 * A client's message rate: a token bucket of `perSecond` tokens a second holding at most
 * BURST_SECONDS seconds' worth. `admit` is false once the client sent faster than that.
 */
export class MessageRate {
  private tokens: number;
  private last: number;
  private readonly capacity: number;

  constructor(
    private readonly perSecond: number,
    now: number,
  ) {
    this.capacity = perSecond * BURST_SECONDS;
    this.tokens = this.capacity;
    this.last = now;
  }

  admit(now: number): boolean {
    const elapsed = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.tokens = Math.min(this.capacity, this.tokens + elapsed * this.perSecond);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** A client with more than `maxBufferedBytes` not yet written is too slow to keep. */
export const tooSlow = (bufferedBytes: number, maxBufferedBytes: number): boolean => bufferedBytes > maxBufferedBytes;

/** WebSocket close codes the fan-out uses (RFC 6455 §7.4.1). */
export const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_TRY_AGAIN_LATER = 1013;
export const CLOSE_GOING_AWAY = 1001;
