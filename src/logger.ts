/**
 * Structured JSON logs (pino) on stdout. Writes are asynchronous: lines logged while a write
 * is in progress go out together in the next one, so one line per request does not cost a
 * write(2) each under load, and a quiet proxy still logs at once. pino flushes on exit.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false });
  return pino({ level, base: { service: 'stacks-cache-proxy' } }, destination);
}
