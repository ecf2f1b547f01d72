/**
 * The primary's side of single-flight across workers (worker mode without Redis): per key, the
 * first worker to ask leads (fetches), later askers wait for it; when the leader is done, each
 * waiter gets the leader's entry bytes, or `released` when there are none (the leader failed,
 * died, stored nothing, or held the key longer than `holdMs`): they then fetch themselves, as
 * they do when a Redis lock holder fails. Everything is bounded: keys held, waiters per key,
 * bytes relayed. It keeps no entry: bytes pass through to the waiters and are dropped.
 */
import type { Config } from '../config.js';
import type { FlightAnswer, FlightAsk, FlightDone } from './messages.js';

export interface FlightLimits {
  /** Keys led at once; past it an asker is `refused` (it fetches itself). */
  maxKeys: number;
  /** Waiters on one key; past it an asker is `refused`. */
  maxWaitersPerKey: number;
  /** Larger entry bytes are not relayed (the waiters are `released`): cache.memory.maxEntryBytes. */
  maxEntryBytes: number;
  /** How long a leader may hold a key: cache.sharedSingleFlight.lockTtlMs, as the Redis lock's lifetime. */
  holdMs: number;
}

/** A worker's ask: the worker (cluster id) and its ask's id. */
interface Asker {
  worker: number;
  id: number;
}

interface Flight {
  leader: Asker;
  waiters: Asker[];
  cancelHold: () => void;
}

/** Runs `fire` after `ms` unless cancelled (tests pass their own). */
/**
 * Keys led at once, and waiters on one key. A worker asks once per key (its own single-flight
 * joins the rest), so waiters per key stay below the worker count (at most 256) but for the rare
 * ask of a newer activity generation.
 */
const MAX_FLIGHT_KEYS = 10_000;
const MAX_FLIGHT_WAITERS = 1_024;

/** The primary's limits for a config: entries relayed up to the memory tier's largest, held up to the lock TTL. */
export function flightLimitsFor(config: Config): FlightLimits {
  return {
    maxKeys: MAX_FLIGHT_KEYS,
    maxWaitersPerKey: MAX_FLIGHT_WAITERS,
    maxEntryBytes: config.cache.memory.maxEntryBytes,
    holdMs: config.cache.sharedSingleFlight.lockTtlMs,
  };
}

export type SetTimer = (ms: number, fire: () => void) => () => void;

const realTimer: SetTimer = (ms, fire) => {
  const timer = setTimeout(fire, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/** What an ask came to, for the primary's debug log. */
export type AskOutcome = 'lead' | 'wait' | 'refused';

export class FlightCoordinator {
  private readonly flights = new Map<string, Flight>();

  constructor(
    private readonly limits: FlightLimits,
    private readonly send: (worker: number, answer: FlightAnswer) => void,
    private readonly setTimer: SetTimer = realTimer,
  ) {}

  ask(worker: number, { id, key }: FlightAsk): AskOutcome {
    const asker = { worker, id };
    const flight = this.flights.get(key);
    if (!flight) {
      if (this.flights.size >= this.limits.maxKeys) return this.refuse(asker);
      const cancelHold = this.setTimer(this.limits.holdMs, () => this.end(key, undefined));
      this.flights.set(key, { leader: asker, waiters: [], cancelHold });
      this.send(worker, { type: 'scp:flight', id, result: 'lead' });
      return 'lead';
    }
    if (flight.waiters.length >= this.limits.maxWaitersPerKey) return this.refuse(asker);
    flight.waiters.push(asker);
    if (flight.waiters.length === 1) this.send(flight.leader.worker, { type: 'scp:flight', id: flight.leader.id, result: 'wanted' });
    return 'wait';
  }

  /**
   * The leader is done: how many waiters got its entry (`filled`) or were released; undefined for
   * a `done` from anyone else (a leader whose hold ran out), which is ignored.
   */
  done(worker: number, { id, key, bytes }: FlightDone): { filled: number; released: number } | undefined {
    const flight = this.flights.get(key);
    if (!flight || flight.leader.worker !== worker || flight.leader.id !== id) return undefined;
    const relayed = bytes !== undefined && bytes.length <= this.limits.maxEntryBytes ? bytes : undefined;
    this.end(key, relayed);
    const waiters = flight.waiters.length;
    return relayed ? { filled: waiters, released: 0 } : { filled: 0, released: waiters };
  }

  /** A worker exited: the keys it led are released, its waits dropped (nobody is left to answer). */
  workerGone(worker: number): void {
    for (const [key, flight] of [...this.flights]) {
      if (flight.leader.worker === worker) this.end(key, undefined);
      else flight.waiters = flight.waiters.filter((waiter) => waiter.worker !== worker);
    }
  }

  /** Waiters on `key` now. */
  waiters(key: string): number {
    return this.flights.get(key)?.waiters.length ?? 0;
  }

  /** Keys led now. */
  get size(): number {
    return this.flights.size;
  }

  private refuse({ worker, id }: Asker): AskOutcome {
    this.send(worker, { type: 'scp:flight', id, result: 'refused' });
    return 'refused';
  }

  private end(key: string, bytes: Uint8Array | undefined): void {
    const flight = this.flights.get(key);
    if (!flight) return;
    this.flights.delete(key);
    flight.cancelHold();
    for (const { worker, id } of flight.waiters) {
      this.send(worker, bytes ? { type: 'scp:flight', id, result: 'filled', bytes } : { type: 'scp:flight', id, result: 'released' });
    }
  }
}
