/**
 * The upstream's Redis change notifier as a feed (issue 16, optional: live.redisNotifier.url).
 * With REDIS_NOTIFIER_ENABLED the upstream appends one entry per new canonical block to a Redis
 * stream (its src/datastore/redis-notifier.ts): `XADD <REDIS_QUEUE> * data <json>` with
 * `{id, payload: {chain, network, time, apply_blocks: [{hash, index, time}], rollback_blocks: [...]}}`.
 * Rolled-back blocks are named explicitly, so it says "reorg" without the proxy having to find out.
 *
 * This reads it with XREAD BLOCK, from the stream's end at start (the id of its last entry, so
 * nothing added between two reads is skipped), then from the last id read. Every entry that
 * applies or rolls back blocks polls every upstream's tip at once (tracker.pollNow): as with the
 * JSON-RPC feed, an entry is only a reason to ask, and the tracker's own reorg check acts on what
 * the poll answers. Redis going away is waited out (reads again with backoff, never throws;
 * close() ends every wait at once).
 *
 * Memory: XREAD returns whole entries, whatever their size: one read holds at most
 * ENTRIES_PER_READ of them, each as large as that Redis lets a value be (its proto-max-bulk-len,
 * 512 MB by default). One larger than MAX_ENTRY_BYTES is read in full and only not parsed. The
 * bound is therefore the operator's: this Redis is the upstream's, which they run, and the
 * upstream writes entries of a few hundred bytes.
 */
import { RedisStreamReader, type StreamEntry } from '../cache/redis-store.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { reconnectDelay } from './retry-backoff.js';

export interface RedisNotifierSettings {
  url: string;
  stream: string;
  blockMs: number;
  /** Backoff between reads that failed (live.push.reconnectMinMs / reconnectMaxMs). */
  retryMinMs: number;
  retryMaxMs: number;
}

export interface RedisNotifierDeps {
  settings: RedisNotifierSettings;
  /** Polls every upstream's tip now. */
  pollAll: () => void;
  telemetry: Telemetry;
}

/** The label the notifier's notifications are counted under (it speaks for no one upstream). */
export const REDIS_NOTIFIER_ORIGIN = 'redis_notifier';
/**
 * Entries one XREAD returns at most: a backlog is read in steps, not in one reply, and one
 * reply holds at most this many entries of whatever size they are. Blocks come seconds apart:
 * more than one entry per read is already a backlog.
 */
export const ENTRIES_PER_READ = 16;
/** The upstream's entries are a few hundred bytes (a few KB with a deep reorg); one beyond this is read but not parsed. */
export const MAX_ENTRY_BYTES = 256 * 1024;

/** What one stream entry says: blocks applied and rolled back, or nothing understood. */
export interface NotifierEntry {
  applied: number;
  rolledBack: number;
}

/** One entry's fields ([name, value, ...]) as the upstream writes them; undefined when not understood. */
export function parseNotifierEntry(fields: readonly string[]): NotifierEntry | undefined {
  let data: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'data') data = fields[i + 1];
  if (data === undefined || Buffer.byteLength(data) > MAX_ENTRY_BYTES) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return undefined;
  }
  const payload = (message as { payload?: unknown } | null)?.payload as { apply_blocks?: unknown; rollback_blocks?: unknown } | undefined;
  if (typeof payload !== 'object' || payload === null) return undefined;
  const count = (blocks: unknown): number => (Array.isArray(blocks) ? blocks.length : 0);
  return { applied: count(payload.apply_blocks), rolledBack: count(payload.rollback_blocks) };
}

export class RedisNotifierFeed {
  private reader: RedisStreamReader | undefined;
  private closed = false;
  private running: Promise<void> | undefined;
  /** Aborted by close(): every wait (for the connection, between failed reads) ends at once. */
  private readonly closing = new AbortController();
  /** Rolled-back blocks the notifier has named since the start. */
  rollbacks = 0;
  private markPositioned: () => void = () => undefined;
  /** Resolves once the feed knows where the stream ends: entries added from then on are read. */
  readonly positioned = new Promise<void>((resolve) => (this.markPositioned = resolve));

  constructor(private readonly deps: RedisNotifierDeps) {}

  /** Connects and reads until close(). */
  start(): void {
    if (this.reader || this.closed) return;
    // A blocking read holds the connection for blockMs: its timeout must be longer.
    const reader = new RedisStreamReader({ url: this.deps.settings.url, commandTimeoutMs: this.deps.settings.blockMs + 5_000, autoPipelining: false });
    this.reader = reader;
    this.running = this.run(reader);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    this.reader?.close();
    await this.running;
  }

  private async run(reader: RedisStreamReader): Promise<void> {
    const { stream, blockMs, retryMinMs, retryMaxMs } = this.deps.settings;
    let lastId: string | undefined;
    let failures = 0;
    while (!this.closed) {
      try {
        // Commands are not queued while the connection is down: wait for it (a while at most).
        if (!reader.connected) await reader.whenConnected(retryMaxMs, this.closing.signal);
        if (this.closed) return;
        if (lastId === undefined) {
          lastId = await reader.lastId(stream);
          this.markPositioned();
        }
        const entries = await reader.read(stream, lastId, ENTRIES_PER_READ, blockMs);
        failures = 0;
        if (entries.length === 0) continue;
        lastId = entries[entries.length - 1]?.id ?? lastId;
        if (this.count(entries)) this.deps.pollAll();
      } catch {
        if (this.closed) return;
        // Redis away (or the key is not a stream): read again later, from where it stopped.
        await this.pause(reconnectDelay(failures, retryMinMs, retryMaxMs, Math.random()));
        failures += 1;
      }
    }
  }

  /** Counts what the entries say; true when any applied or rolled back a block. */
  private count(entries: StreamEntry[]): boolean {
    let moved = false;
    for (const { fields } of entries) {
      const entry = parseNotifierEntry(fields);
      if (!entry) continue;
      if (entry.applied > 0) this.deps.telemetry.pushNotified(REDIS_NOTIFIER_ORIGIN, 'redis_apply');
      if (entry.rolledBack > 0) {
        this.rollbacks += entry.rolledBack;
        this.deps.telemetry.pushNotified(REDIS_NOTIFIER_ORIGIN, 'redis_rollback');
      }
      moved ||= entry.applied > 0 || entry.rolledBack > 0;
    }
    return moved;
  }

  /** Waits `ms`, or less when close() comes first. */
  private pause(ms: number): Promise<void> {
    const { signal } = this.closing;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
