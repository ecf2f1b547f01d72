/**
 * Parses the Redis URL forms the proxy accepts. WHATWG `URL` rejects the comma-separated
 * host lists of Sentinel and Cluster URLs, so this small parser handles all three forms.
 */
export type RedisMode = 'standalone' | 'sentinel' | 'cluster';

export interface RedisUrl {
  mode: RedisMode;
  tls: boolean;
  username?: string;
  password?: string;
  hosts: Array<{ host: string; port: number }>;
  /** Database number (standalone) or master name (Sentinel). */
  path: string;
}

const URL_SHAPE = /^(rediss?|redis\+sentinel|redis\+cluster):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]*)(?:\/([^?#]*))?$/;

const MODES: Record<string, RedisMode> = {
  redis: 'standalone',
  rediss: 'standalone',
  'redis+sentinel': 'sentinel',
  'redis+cluster': 'cluster',
};

export function parseRedisUrl(url: string): RedisUrl | undefined {
  const match = URL_SHAPE.exec(url);
  if (!match) return undefined;
  const [, scheme = '', user, pass, hostList = '', path = ''] = match;
  const defaultPort = scheme === 'redis+sentinel' ? 26379 : 6379;
  const hosts = (hostList || '127.0.0.1').split(',').map((entry) => {
    const [host = '127.0.0.1', port] = entry.split(':');
    return { host: host || '127.0.0.1', port: port ? Number(port) : defaultPort };
  });
  if (hosts.some((h) => !Number.isInteger(h.port) || h.port <= 0 || h.port > 65535)) return undefined;
  return {
    mode: MODES[scheme] ?? 'standalone',
    tls: scheme === 'rediss',
    username: user ? decodeURIComponent(user) : undefined,
    password: pass ? decodeURIComponent(pass) : undefined,
    hosts,
    path,
  };
}

/** The same URL with its password masked, for logs. */
export function redactRedisUrl(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}
