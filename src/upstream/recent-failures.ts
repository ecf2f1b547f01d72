/**
 * One upstream's failures since its last success, the newest `capacity` of them: what opened its
 * circuit breaker, for the "opened" log line, /ready and the status page. Pure (time comes in as
 * an argument) and bounded: a ring of `capacity` slots (the breaker's failureThreshold), messages
 * cut to MAX_FAILURE_MESSAGE_CHARS. Cheap where it is called on every upstream answer: a success
 * only resets a count, a failure fills one slot; lists are made only when read.
 */

import { cutText } from '../cut-text.js';

/** A failed attempt: its kind (timeout, connect, 5xx, invalid, ...), the route id it was for, and what it met. */
export interface UpstreamFailure {
  kind: string;
  route: string;
  message: string;
}

/** A kept failure as read: how long before the reading it happened. */
export interface RecentFailure extends UpstreamFailure {
  ageMs: number;
}

/** Longest message kept per failure: an upstream's error text is not trusted to be short, and a log line holds several. */
export const MAX_FAILURE_MESSAGE_CHARS = 200;

interface Slot extends UpstreamFailure {
  at: number;
}

const cut = (text: string): string => cutText(text, MAX_FAILURE_MESSAGE_CHARS);

export class RecentFailures {
  private readonly slots: Array<Slot | undefined>;
  /** Where the next failure goes. */
  private next = 0;
  /** How many slots hold a failure since the last success (at most the capacity). */
  private held = 0;

  constructor(capacity: number) {
    this.slots = new Array<Slot | undefined>(Math.max(1, Math.floor(capacity)));
  }

  get size(): number {
    return this.held;
  }

  add(failure: UpstreamFailure, at: number): void {
    this.slots[this.next] = { kind: cut(failure.kind), route: cut(failure.route), message: cut(failure.message), at };
    this.next = (this.next + 1) % this.slots.length;
    if (this.held < this.slots.length) this.held += 1;
  }

  /** A success: the failures before it no longer explain anything. */
  clear(): void {
    this.held = 0;
  }

  /** Oldest first, each with its age at `now`. */
  list(now: number): RecentFailure[] {
    const listed: RecentFailure[] = [];
    const capacity = this.slots.length;
    for (let i = this.held; i > 0; i--) {
      const slot = this.slots[(this.next - i + capacity) % capacity] as Slot;
      listed.push({ kind: slot.kind, route: slot.route, message: slot.message, ageMs: Math.max(0, now - slot.at) });
    }
    return listed;
  }
}
