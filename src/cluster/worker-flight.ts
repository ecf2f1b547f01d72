/**
 * A worker's side of single-flight through the primary (worker mode without Redis), behind the
 * interface the read path uses for the Redis one (cache/shared-flight.ts): before it fetches key K
 * the worker asks the primary (flight-coordinator.ts). Leading, it fetches and, when somebody
 * waits, sends the primary its entry's encoded bytes (the Redis tier's encoding, entry.ts): the
 * memory tiers are per worker, so a waiter needs the entry itself, not word that it landed.
 * Waiting, it gets those bytes, or fetches itself when the leader stored nothing, failed or died,
 * when `waitMs` passes, or when the primary cannot be reached.
 */
import type { CacheEntry } from '../cache/entry.js';
import type { Config } from '../config.js';
import { decodeEntry, encodeEntry } from '../cache/entry.js';
import type { CrossProcessFlight, SharedFlightOutcome } from '../cache/shared-flight.js';
import type { PrimaryFlightOutcome, Telemetry } from '../telemetry/telemetry.js';
import { isFlightAnswer, type FlightAnswer, type FlightAsk, type FlightDone } from './messages.js';

export interface WorkerFlightSettings {
  /** Longest a waiter waits for the leader: cache.sharedSingleFlight.waitMs. */
  waitMs: number;
  /** Larger entries are not sent to the primary (its waiters fetch themselves): cache.memory.maxEntryBytes. */
  maxEntryBytes: number;
}

export function workerFlightSettingsFor(config: Config): WorkerFlightSettings {
  return { waitMs: config.cache.sharedSingleFlight.waitMs, maxEntryBytes: config.cache.memory.maxEntryBytes };
}

/** The way to the primary: false when the message could not be sent (the channel is closed). */
export type SendToPrimary = (message: FlightAsk | FlightDone) => boolean;

/** An ask waiting for its first answer; `settle` is gone once it timed out (the answer is still expected). */
interface Pending {
  key: string;
  settle?: (answer: FlightAnswer | undefined) => void;
}

export class WorkerFlight implements CrossProcessFlight {
  private nextId = 0;
  /** Asks not answered yet (or whose answer came after `waitMs`: see `received`). */
  private readonly pending = new Map<number, Pending>();
  /** Flights this worker leads: whether a waiter wants the entry. */
  private readonly leading = new Map<number, { wanted: boolean }>();

  constructor(
    private readonly settings: WorkerFlightSettings,
    private readonly send: SendToPrimary,
    private readonly telemetry: Pick<Telemetry, 'primaryFlight'>,
  ) {}

  /** Every message from the primary: this flight's answers are taken, anything else ignored. */
  received(message: unknown): void {
    if (!isFlightAnswer(message)) return;
    if (message.result === 'wanted') {
      const lead = this.leading.get(message.id);
      if (lead) lead.wanted = true;
      return;
    }
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    // Past `waitMs` this worker fetches on its own: a lead that comes now is handed straight back.
    if (!pending.settle) {
      if (message.result === 'lead') this.sendDone(message.id, pending.key);
      return;
    }
    // Here, not where the ask's promise resumes: a `wanted` may be the very next message.
    if (message.result === 'lead') this.leading.set(message.id, { wanted: false });
    pending.settle(message);
  }

  /** The primary is gone: every ask settles (each fetches itself). */
  disconnected(): void {
    for (const [id, pending] of [...this.pending]) {
      this.pending.delete(id);
      pending.settle?.(undefined);
    }
  }

  async run<T>(
    key: string,
    route: string,
    fetch: (mustLand: boolean) => Promise<T>,
    accept: (entry: CacheEntry) => boolean,
    entryOf: (value: T) => CacheEntry | undefined,
  ): Promise<SharedFlightOutcome<T>> {
    const answer = await this.ask(key);
    let outcome: PrimaryFlightOutcome;
    if (answer === 'timeout') outcome = 'timeout';
    else if (answer === undefined || answer.result === 'refused') outcome = 'refused';
    else if (answer.result === 'lead') return this.lead(answer.id, key, route, fetch, entryOf);
    else if (answer.result === 'filled') {
      const entry = decodeEntry(Buffer.from(answer.bytes.buffer, answer.bytes.byteOffset, answer.bytes.byteLength));
      if (entry && accept(entry)) {
        this.telemetry.primaryFlight(route, 'filled');
        return { kind: 'filled', entry };
      }
      outcome = 'released';
    } else outcome = 'released';
    this.telemetry.primaryFlight(route, outcome);
    return { kind: 'fetched', value: await fetch(false) };
  }

  /**
   * The first answer to an ask of `key`: `lead` comes at once, a waiter's when the leader is done;
   * 'timeout' past `waitMs`, undefined when the primary cannot be reached.
   */
  private ask(key: string): Promise<FlightAnswer | 'timeout' | undefined> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const pending: Pending = { key };
      const timer = setTimeout(() => {
        pending.settle = undefined;
        resolve('timeout');
      }, this.settings.waitMs);
      pending.settle = (answer) => {
        clearTimeout(timer);
        resolve(answer);
      };
      this.pending.set(id, pending);
      if (!this.send({ type: 'scp:flight?', id, key })) {
        this.pending.delete(id);
        pending.settle(undefined);
      }
    });
  }

  /**
   * Fetches; then releases the key, with the entry's bytes when a waiter wants them, whatever the
   * fetch came to. A waiter whose `wanted` crosses this `done` on the channel (the last IPC hop of
   * the fetch) is released and fetches itself, as one asking just after the flight ended would.
   */
  private async lead<T>(id: number, key: string, route: string, fetch: (mustLand: boolean) => Promise<T>, entryOf: (value: T) => CacheEntry | undefined) {
    const lead = this.leading.get(id) ?? { wanted: false };
    this.telemetry.primaryFlight(route, 'led');
    let entry: CacheEntry | undefined;
    try {
      const value = await fetch(false);
      entry = entryOf(value);
      return { kind: 'fetched', value } as const;
    } finally {
      this.leading.delete(id);
      const bytes = lead.wanted && entry ? encodeEntry(entry) : undefined;
      this.sendDone(id, key, bytes && bytes.length <= this.settings.maxEntryBytes ? bytes : undefined);
    }
  }

  private sendDone(id: number, key: string, bytes?: Buffer): void {
    this.send(bytes ? { type: 'scp:flight!', id, key, bytes } : { type: 'scp:flight!', id, key });
  }
}
