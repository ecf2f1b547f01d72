/** Who a request comes from, for rate limits: CIDR matching and X-Forwarded-For walking. */
import { describe, expect, it } from 'vitest';
import { cidrContains, clientOf, parseAddress, parseCidr, parseForwardedEntry, TrustedProxies } from '../../src/limits/client-identity.js';

const addr = (text: string) => {
  const parsed = parseAddress(text);
  if (!parsed) throw new Error(`bad test address ${text}`);
  return parsed;
};

describe('addresses', () => {
  it.each(['1.2.3.4', '::1', '::', '2001:db8::1', 'fe80::1%eth0', '::ffff:10.0.0.1', '2001:db8:0:0:0:0:0:1', '1:2:3:4:5:6:7:8'])('parses %s', (text) => {
    expect(parseAddress(text)).toBeDefined();
  });

  it.each([
    '',
    'garbage',
    '1.2.3',
    '1.2.3.256',
    '1.2.3.4.5',
    '01234::',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':::',
    '1:2:3:4:5:6:7::8',
    '12345::1',
    ' 1.2.3.4',
    'unknown',
  ])('refuses %j', (text) => {
    expect(parseAddress(text)).toBeUndefined();
  });

  it('spells IPv4 and IPv4-mapped IPv6 as the same address', () => {
    expect(addr('::ffff:192.0.2.7')).toEqual(addr('192.0.2.7'));
    expect(addr('::ffff:c000:207')).toEqual(addr('192.0.2.7'));
  });

  it('reads X-Forwarded-For entries with spaces, ports and brackets', () => {
    expect(parseForwardedEntry('  192.0.2.7  ')).toEqual(addr('192.0.2.7'));
    expect(parseForwardedEntry('192.0.2.7:51234')).toEqual(addr('192.0.2.7'));
    expect(parseForwardedEntry('[2001:db8::7]:443')).toEqual(addr('2001:db8::7'));
    expect(parseForwardedEntry('[2001:db8::7]')).toEqual(addr('2001:db8::7'));
    expect(parseForwardedEntry(' 2001:db8::7 ')).toEqual(addr('2001:db8::7'));
    expect(parseForwardedEntry('[2001:db8::7')).toBeUndefined();
    expect(parseForwardedEntry('[2001:db8::7]x')).toBeUndefined();
    expect(parseForwardedEntry('192.0.2.7:port')).toBeUndefined();
    expect(parseForwardedEntry('unknown')).toBeUndefined();
    expect(parseForwardedEntry('')).toBeUndefined();
  });
});

describe('CIDRs', () => {
  const contains = (cidr: string, address: string) => {
    const parsed = parseCidr(cidr);
    if (!parsed) throw new Error(`bad test CIDR ${cidr}`);
    return cidrContains(parsed, addr(address));
  };

  it('matches IPv4 prefixes, including a mapped spelling of the address', () => {
    expect(contains('10.0.0.0/8', '10.255.1.2')).toBe(true);
    expect(contains('10.0.0.0/8', '11.0.0.1')).toBe(false);
    expect(contains('10.0.0.0/8', '::ffff:10.1.2.3')).toBe(true);
    expect(contains('192.168.1.128/25', '192.168.1.200')).toBe(true);
    expect(contains('192.168.1.128/25', '192.168.1.127')).toBe(false);
    expect(contains('127.0.0.1/32', '127.0.0.1')).toBe(true);
    expect(contains('127.0.0.1', '127.0.0.2')).toBe(false);
    expect(contains('0.0.0.0/0', '203.0.113.9')).toBe(true);
    expect(contains('0.0.0.0/0', '2001:db8::1')).toBe(false);
  });

  it('matches IPv6 prefixes', () => {
    expect(contains('2001:db8::/32', '2001:db8:ffff::1')).toBe(true);
    expect(contains('2001:db8::/32', '2001:db9::1')).toBe(false);
    expect(contains('fd00::/7', 'fdff::1')).toBe(true);
    expect(contains('fd00::/8', 'fc00::1')).toBe(false);
    expect(contains('::ffff:10.0.0.0/104', '10.9.9.9')).toBe(true);
    expect(contains('::/0', '1.2.3.4')).toBe(true);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/x', 'nonsense/8', '10.0.0.0/8/8', ''])('refuses %j', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });
});

describe('the client of a request', () => {
  const trusted = new TrustedProxies(['10.0.0.0/8', 'fd00::/8']);
  const none = new TrustedProxies([]);

  it('is the peer when the peer is not a trusted proxy, whatever X-Forwarded-For says', () => {
    expect(clientOf('203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(clientOf('::ffff:203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(clientOf('10.0.0.5', '198.51.100.1', none)).toBe('10.0.0.5');
  });

  it('is the right-most untrusted X-Forwarded-For entry behind trusted proxies', () => {
    expect(clientOf('10.0.0.5', '198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientOf('10.0.0.5', '6.6.6.6, 198.51.100.1, 10.0.0.9', trusted)).toBe('198.51.100.1');
    expect(clientOf('::ffff:10.0.0.5', '6.6.6.6,198.51.100.1:4000', trusted)).toBe('198.51.100.1');
    expect(clientOf('fd00::1', '[2001:db8:1:2:3:4:5:6]:443', trusted)).toBe('2001:db8:1:2::/64');
  });

  it('is the peer when a trusted peer sends no X-Forwarded-For', () => {
    expect(clientOf('10.0.0.5', undefined, trusted)).toBe('10.0.0.5');
  });

  it('stops at the last trusted hop when an entry is garbage', () => {
    expect(clientOf('10.0.0.5', '198.51.100.1, garbage', trusted)).toBe('10.0.0.5');
    expect(clientOf('10.0.0.5', '198.51.100.1, garbage, 10.0.0.7', trusted)).toBe('10.0.0.7');
    expect(clientOf('10.0.0.5', '', trusted)).toBe('10.0.0.5');
  });

  it('is the left-most hop when every hop is trusted', () => {
    expect(clientOf('10.0.0.5', '10.1.1.1, 10.2.2.2', trusted)).toBe('10.1.1.1');
  });

  it('groups IPv6 clients by /64', () => {
    expect(clientOf('2001:db8:1:2::1', undefined, none)).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:2:ffff::9', undefined, none)).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:3::1', undefined, none)).toBe('2001:db8:1:3::/64');
  });
});
