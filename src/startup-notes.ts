/**
 * The few lines a newcomer needs at start-up, logged once by main.ts: which upstreams the proxy
 * reads from and how to change them, and a plain warning when it would run keyless against the
 * public Hiro API, whose anonymous rate limit the tip poll alone uses up.
 */
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { API_KEY_HEADER } from './upstream/outgoing-headers.js';

/** Hiro's public Stacks API hosts: keyless clients get 50 requests a minute (https://docs.hiro.so). */
const HIRO_PUBLIC_HOSTS = new Set(['api.hiro.so', 'api.mainnet.hiro.so', 'api.testnet.hiro.so']);
export const HIRO_ANONYMOUS_REQUESTS_PER_MINUTE = 50;

export interface StartupNote {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  msg: string;
}

const hasApiKeyHeader = (headers: Record<string, string> | undefined): boolean =>
  Object.keys(headers ?? {}).some((name) => name.toLowerCase() === API_KEY_HEADER);

/** The upstreams on Hiro's public hosts that no API key goes to (upstream.apiKey or an x-api-key header). */
export function keylessHiroUpstreams(upstream: Config['upstream']): string[] {
  if (upstream.apiKey !== null || hasApiKeyHeader(upstream.headers)) return [];
  return upstream.urls.filter((url) => {
    const parsed = URL.parse(url);
    return parsed !== null && HIRO_PUBLIC_HOSTS.has(parsed.hostname) && !hasApiKeyHeader(upstream.headersByUrl[parsed.origin]);
  });
}

function withoutPassword(url: string): string {
  const password = URL.parse(url)?.password;
  return password ? url.replace(`:${password}@`, ':***@') : url;
}

export function startupNotes(config: Config): StartupNote[] {
  // A password in a URL never reaches the log (the URLs are otherwise shown as configured).
  const urls = config.upstream.urls.map(withoutPassword);
  const notes: StartupNote[] = [
    {
      level: 'info',
      fields: { upstreams: urls },
      msg: `reading from ${urls.join(', ')}; set UPSTREAM_URLS (comma-separated base URLs, tried in order) to use other upstreams, e.g. your own Stacks API`,
    },
  ];
  const keyless = keylessHiroUpstreams(config.upstream);
  if (keyless.length > 0) {
    const pollsPerMinute = Math.round(60_000 / config.chainTip.pollIntervalMs);
    // Only said when true: a slower poll leaves room, but every miss still spends the budget.
    const pollShare =
      pollsPerMinute > HIRO_ANONYMOUS_REQUESTS_PER_MINUTE
        ? `the chain tip poll alone sends ${pollsPerMinute}/min, so expect 429s and stale answers`
        : `the chain tip poll sends ${pollsPerMinute}/min of them and every cache miss more`;
    notes.push({
      level: 'warn',
      fields: { upstreams: keyless, tipPollsPerMinute: pollsPerMinute },
      msg:
        `no UPSTREAM_API_KEY: the public Hiro API allows ${HIRO_ANONYMOUS_REQUESTS_PER_MINUTE} requests/min without a key, and ` +
        `${pollShare}; ` +
        'set UPSTREAM_API_KEY (a free key: https://platform.hiro.so)',
    });
  }
  return notes;
}

export function logStartupNotes(logger: Logger, config: Config): void {
  for (const note of startupNotes(config)) logger[note.level](note.fields, note.msg);
}
