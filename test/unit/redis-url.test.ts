import { describe, expect, it } from 'vitest';
import { parseRedisUrl, redactRedisUrl } from '../../src/cache/redis-url.js';

describe('parseRedisUrl', () => {
  it('reads standalone URLs with credentials, port and database', () => {
    expect(parseRedisUrl('redis://user:p%40ss@cache:6380/2')).toEqual({
      mode: 'standalone',
      tls: false,
      username: 'user',
      password: 'p@ss',
      hosts: [{ host: 'cache', port: 6380 }],
      path: '2',
    });
    expect(parseRedisUrl('rediss://cache')?.tls).toBe(true);
    expect(parseRedisUrl('redis://cache')?.hosts).toEqual([{ host: 'cache', port: 6379 }]);
  });

  it('reads Sentinel host lists and the master name, with the Sentinel default port', () => {
    expect(parseRedisUrl('redis+sentinel://:secret@s1:26379,s2/mymaster')).toMatchObject({
      mode: 'sentinel',
      password: 'secret',
      hosts: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      path: 'mymaster',
    });
  });

  it('reads Cluster host lists', () => {
    expect(parseRedisUrl('redis+cluster://n1:7000,n2:7001')).toMatchObject({
      mode: 'cluster',
      hosts: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
      ],
    });
  });

  it.each(['http://cache:6379', 'cache:6379', 'redis://cache:notaport', 'redis://cache:70000', ''])('refuses %j', (url) => {
    expect(parseRedisUrl(url)).toBeUndefined();
  });
});

describe('redactRedisUrl', () => {
  it.each([
    ['redis://:secret@cache:6379/0', 'redis://:***@cache:6379/0'],
    ['redis+cluster://admin:secret@h1:7000,h2:7001', 'redis+cluster://admin:***@h1:7000,h2:7001'],
    ['redis://cache:6379', 'redis://cache:6379'],
  ])('%s -> %s', (url, expected) => {
    expect(redactRedisUrl(url)).toBe(expected);
  });
});
