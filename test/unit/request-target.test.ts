import { describe, expect, it } from 'vitest';
import { decideTarget } from '../../src/http/request-target.js';

const decided = (raw: string): string => {
  const decision = decideTarget(raw);
  if (decision.kind !== 'target') throw new Error(`${raw} was refused`);
  return decision.url;
};

describe('decideTarget', () => {
  it.each([
    ['/extended/v1/tx/0xab?x=1', '/extended/v1/tx/0xab?x=1'],
    ['/', '/'],
    ['/extended/', '/extended/'],
    ['//extended//v1/', '/extended/v1/'],
    ['/a/./b', '/a/b'],
    ['/a/b/.', '/a/b/'],
    ['/a/b/..', '/a/'],
    ['/a/b/../c', '/a/c'],
    ['/../../a', '/a'],
    ['/..', '/'],
    ['/a/%2e/b', '/a/b'],
    ['/a/%2E%2e/b', '/b'],
    ['/a/.%2E/b', '/b'],
    ['/a/%2e./b', '/b'],
    ['/a/...', '/a/...'],
    ['/a/.b/..c', '/a/.b/..c'],
    ['/%65xtended/%7Ex%2dy', '/extended/~x-y'],
    ['/a%2Fb/%5C/%20/%C3%A9', '/a%2Fb/%5C/%20/%C3%A9'],
    ['/a%2F..%2Fb', '/a%2F..%2Fb'],
    ['/a?b=/../%2e%2e\\c', '/a?b=/../%2e%2e\\c'],
    ['/a/../b?', '/b?'],
    ['http://host.example/a/./b?q', '/a/b?q'],
    ['https://user@host.example:8443', '/'],
    ['HTTP://host.example?x=1', '/?x=1'],
  ])('reads %s as %s', (raw, url) => {
    expect(decided(raw)).toBe(url);
  });

  it('keeps the decided path and the query apart', () => {
    expect(decideTarget('/a/../b?c=d?e')).toEqual({ kind: 'target', url: '/b?c=d?e', path: '/b', query: 'c=d?e' });
    expect(decideTarget('/b')).toEqual({ kind: 'target', url: '/b', path: '/b', query: '' });
  });

  it.each([
    ['/a\\b', '/a\\b'],
    ['/a/..\\b', '/a/..\\b'],
    ['/a%zz', '/a%zz'],
    ['/a%', '/a%'],
    ['/a%f', '/a%f'],
    ['/a%ff', '/a%ff'],
    ['/a%C3', '/a%C3'],
    ['/a#b', '/a#b'],
    ['/a?b#c', '/a'],
    ['/a b', '/a b'],
    ['/a\u0000', '/a\u0000'],
    ['/a\u00e9', '/a\u00e9'],
    ['*', '*'],
    ['', ''],
    ['?x', ''],
    ['host.example:443', 'host.example:443'],
    ['ftp://host.example/a', 'ftp://host.example/a'],
    ['http://host.example\\a', 'http://host.example\\a'],
    ['http:/a', 'http:/a'],
    ['http://host.example/a\\b', 'http://host.example/a\\b'],
    ['http://host.example/a%zz', '/a%zz'],
  ])('refuses %s, quoting %s', (raw, path) => {
    expect(decideTarget(raw)).toEqual({ kind: 'refused', path });
  });

  it('decides a decided target as itself', () => {
    for (const raw of ['//a/./b/../c/', '/%2e%2e/x%2Fy?q=%2e', 'http://h/a//b']) {
      const once = decided(raw);
      expect(decided(once)).toBe(once);
    }
  });

  it('takes linear time on long hostile paths', () => {
    const hostile = `/${'./../%2e%2E//'.repeat(20_000)}x`;
    expect(decided(hostile)).toBe('/x');
  });
});
