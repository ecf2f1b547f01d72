/**
 * How long a rate-limited upstream is left alone: its Retry-After (delta-seconds or an
 * HTTP-date, RFC 9110 §10.2.3), capped so that a wrong or hostile value cannot take an
 * upstream out for hours, and a default when it sent none or one that does not parse.
 */
export interface RetryAfterSettings {
  /** When the 429 carries no usable Retry-After. */
  defaultMs: number;
  /** The longest an upstream is left alone for one 429. */
  maxMs: number;
}

const DELTA_SECONDS = /^\d+$/;
// Every HTTP-date form (IMF-fixdate, RFC 850, asctime) starts with a day name; Date.parse
// alone would also read "-5" or "1.5" as dates.
const HTTP_DATE = /^(mon|tue|wed|thu|fri|sat|sun)/i;

/** `now` is the proxy's clock, against which an HTTP-date is measured. */
export function retryAfterMs(value: string | undefined, now: number, settings: RetryAfterSettings): number {
  const text = value?.trim() ?? '';
  let wait: number | undefined;
  if (DELTA_SECONDS.test(text)) wait = Number(text) * 1000;
  else if (HTTP_DATE.test(text)) {
    const at = Date.parse(text);
    if (Number.isFinite(at)) wait = Math.max(0, at - now);
  }
  return Math.min(wait ?? settings.defaultMs, settings.maxMs);
}
