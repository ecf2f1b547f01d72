/**
 * Structured JSON logs (pino) on stdout, written in batches: lines gather in memory until
 * BATCH_BYTES of them are waiting, or FLUSH_EVERY_MS has passed, and go out in one write.
 * A write is asynchronous (libuv's thread pool): each one wakes a pool thread, and where the
 * process is limited to one core that thread takes the core from the event loop. Writing each
 * sampled access-log line on its own cost a Redis-tier hit about 6 µs (a CPU profile under wrk,
 * issue 18: `writeString` was the largest single difference from a bare server); in batches,
 * twenty-odd lines share one write. A line waits at most FLUSH_EVERY_MS; pino flushes what is
 * left synchronously on exit.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** Below sonic-boom's largest single write (16 KiB), so a batch always goes out in one. */
const BATCH_BYTES = 4096;
const FLUSH_EVERY_MS = 250;

export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES, periodicFlush: FLUSH_EVERY_MS });
  return pino({ level, base: { service: 'stacks-cache-proxy' } }, destination);
}
