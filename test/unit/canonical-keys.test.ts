/**
 * Cache keys through `validateRequest` + `routeKey` (DESIGN §3 "Keys"): requests the upstream
 * answers identically share one key, different ones never do, and no path parameter can
 * turn the upstream request into a different path (DESIGN §5).
 */
import { describe, expect, it } from 'vitest';
import { KEY_SCHEMA_VERSION, routeKey, transactionKey } from '../../src/cache/key.js';
import { ROUTE_BY_ID } from '../../src/routes/route-table.js';
import type { RouteId, RouteSpec } from '../../src/routes/route-spec.js';
import { validateRequest, type CanonicalRequest } from '../../src/routes/validate.js';

const PREFIX = 'scp';
const ADDRESS = 'ST000000000000000000002AMW42H';
const CONTRACT = `${ADDRESS}.pox-4`;
const TX = 'cba511741b230bd85cb5b3b10d26e0b92695d4a83f95c260cad82a40cd764235';
const TX2 = 'f767164c588e43b1af80e466e59f120037c17bd49b25b1529543132a2aa331a8';

function routeOf(id: RouteId): RouteSpec {
  const route = ROUTE_BY_ID.get(id);
  if (!route) throw new Error(`no route ${id}`);
  return route;
}

function canonical(id: RouteId, params: Record<string, string>, query = ''): CanonicalRequest {
  const outcome = validateRequest(routeOf(id), params, query);
  if (outcome.kind !== 'request') throw new Error(`expected a request for ${id} ${JSON.stringify(params)} ?${query}: ${JSON.stringify(outcome)}`);
  return outcome.request;
}

function keyOf(id: RouteId, params: Record<string, string>, query = ''): string {
  return routeKey(PREFIX, id, canonical(id, params, query).canonicalPath);
}

const txKey = (id: string, query = '') => keyOf('tx_by_id', { tx_id: id }, query);
const addressTxsKey = (query: string) => keyOf('address_transactions', { principal: ADDRESS }, query);
const contractEventsKey = (query: string) => keyOf('contract_events', { contract_id: CONTRACT }, query);

describe('key format', () => {
  it('is <prefix>:v<schema>:<route id>:<canonical path and query>', () => {
    expect(txKey(`0x${TX}`)).toBe(`scp:v${KEY_SCHEMA_VERSION}:tx_by_id:/extended/v1/tx/0x${TX}`);
    expect(addressTxsKey('limit=5')).toBe(`scp:v${KEY_SCHEMA_VERSION}:address_transactions:/extended/v1/address/${ADDRESS}/transactions?limit=5`);
  });

  it('separates prefixes', () => {
    const path = canonical('tx_by_id', { tx_id: `0x${TX}` }).upstreamPath;
    expect(routeKey('a', 'tx_by_id', path)).not.toBe(routeKey('b', 'tx_by_id', path));
  });

  it('lower-cases per-transaction keys and appends the query', () => {
    expect(transactionKey(PREFIX, `0x${TX.toUpperCase()}`, '')).toBe(transactionKey(PREFIX, `0x${TX}`, ''));
    expect(transactionKey(PREFIX, `0x${TX}`, 'event_limit=5')).toBe(`scp:v${KEY_SCHEMA_VERSION}:tx:0x${TX}?event_limit=5`);
    expect(transactionKey(PREFIX, `0x${TX}`, 'event_limit=5')).not.toBe(transactionKey(PREFIX, `0x${TX}`, ''));
  });
});

describe('hex ids and hashes', () => {
  it('gives 0xABC… and 0xabc… the same key', () => {
    expect(txKey(`0x${TX.toUpperCase()}`)).toBe(txKey(`0x${TX}`));
    const mixed = [...TX].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
    expect(txKey(`0x${mixed}`)).toBe(txKey(`0x${TX}`));
  });

  it('makes an id without 0x a redirect, not a key', () => {
    expect(validateRequest(routeOf('tx_by_id'), { tx_id: TX }, '')).toEqual({ kind: 'redirect', location: `/extended/v1/tx/0x${TX}` });
  });

  it('keys different transactions apart', () => {
    expect(txKey(`0x${TX}`)).not.toBe(txKey(`0x${TX2}`));
  });

  it('normalizes block hashes: case and 0x', () => {
    const key = keyOf('block', { height_or_hash: `0x${TX}` });
    expect(keyOf('block', { height_or_hash: TX })).toBe(key);
    expect(keyOf('block', { height_or_hash: `0x${TX.toUpperCase()}` })).toBe(key);
    expect(keyOf('block', { height_or_hash: TX.toUpperCase() })).toBe(key);
  });

  it('normalizes block heights written differently', () => {
    expect(keyOf('block', { height_or_hash: '007' })).toBe(keyOf('block', { height_or_hash: '7' }));
    expect(keyOf('block', { height_or_hash: '7' })).not.toBe(keyOf('block', { height_or_hash: '8' }));
  });

  it('normalizes tx/events tx_id: case and missing 0x', () => {
    const key = keyOf('tx_events', {}, `tx_id=0x${TX}`);
    expect(keyOf('tx_events', {}, `tx_id=${TX}`)).toBe(key);
    expect(keyOf('tx_events', {}, `tx_id=0x${TX.toUpperCase()}`)).toBe(key);
  });

  it('normalizes with_transfers tx ids: case and missing 0x', () => {
    const key = keyOf('tx_with_transfers', { principal: ADDRESS, tx_id: `0x${TX}` });
    expect(keyOf('tx_with_transfers', { principal: ADDRESS, tx_id: TX })).toBe(key);
    expect(keyOf('tx_with_transfers', { principal: ADDRESS, tx_id: TX.toUpperCase() })).toBe(key);
  });
});

describe('defaults', () => {
  it.each(['limit=20', 'offset=0', 'unanchored=false', 'exclude_function_args=false', 'limit=20&offset=0&unanchored=false', 'limit=0'])(
    'address transactions: %s equals no query',
    (query) => {
      expect(addressTxsKey(query)).toBe(addressTxsKey(''));
    },
  );

  it.each(['event_limit=20', 'event_offset=0', 'unanchored=false', 'exclude_function_args=false', 'event_limit=0'])('tx by id: %s equals no query', (query) => {
    expect(txKey(`0x${TX}`, query)).toBe(txKey(`0x${TX}`));
  });

  it.each(['limit=20', 'offset=0', 'limit=0'])('contract events: %s equals no query', (query) => {
    expect(contractEventsKey(query)).toBe(contractEventsKey(''));
  });

  it('keeps values that are not the default', () => {
    expect(addressTxsKey('limit=21')).not.toBe(addressTxsKey(''));
    expect(addressTxsKey('offset=1')).not.toBe(addressTxsKey(''));
    expect(addressTxsKey('unanchored=true')).not.toBe(addressTxsKey(''));
    expect(addressTxsKey('limit=5')).not.toBe(addressTxsKey('limit=6'));
  });

  it('keeps limit=0 apart from the default on the v2 address route', () => {
    const v2 = (q: string) => keyOf('address_transactions_v2', { address: ADDRESS }, q);
    expect(v2('limit=0')).not.toBe(v2(''));
    expect(v2('limit=20')).toBe(v2(''));
  });

  it('keeps the balance until_block forms apart (absent, empty and a height answer differently)', () => {
    const stx = (q: string) => keyOf('address_stx_balance', { principal: ADDRESS }, q);
    const keys = new Set([stx(''), stx('until_block='), stx('until_block=5')]);
    expect(keys.size).toBe(3);
    expect(stx('until_block=5abc')).toBe(stx('until_block=5'));
  });
});

describe('parameter order and unknown parameters', () => {
  it('ignores the order of parameters', () => {
    expect(addressTxsKey('limit=5&offset=10')).toBe(addressTxsKey('offset=10&limit=5'));
    expect(addressTxsKey('unanchored=true&limit=5&exclude_function_args=true')).toBe(addressTxsKey('exclude_function_args=true&limit=5&unanchored=true'));
    expect(keyOf('tx_events', {}, `address=${ADDRESS}&limit=5`)).toBe(keyOf('tx_events', {}, `limit=5&address=${ADDRESS}`));
  });

  it('drops parameters the route does not accept', () => {
    expect(addressTxsKey('foo=bar')).toBe(addressTxsKey(''));
    expect(addressTxsKey('limit=5&cachebuster=123&_=9')).toBe(addressTxsKey('limit=5'));
    expect(contractEventsKey('unanchored=true')).toBe(contractEventsKey(''));
    expect(keyOf('mempool_fees', {}, 'x=1&y=2')).toBe(keyOf('mempool_fees', {}));
    expect(keyOf('block', { height_or_hash: 'latest' }, 'limit=5')).toBe(keyOf('block', { height_or_hash: 'latest' }));
  });

  it('does not let an unknown parameter leak into the upstream path', () => {
    expect(canonical('address_transactions', { principal: ADDRESS }, 'foo=bar&limit=5').upstreamPath).toBe(
      `/extended/v1/address/${ADDRESS}/transactions?limit=5`,
    );
  });
});

describe('lists', () => {
  it('gives repeated and comma tx_id lists one key', () => {
    const key = keyOf('tx_multiple', {}, `tx_id=0x${TX},0x${TX2}`);
    expect(keyOf('tx_multiple', {}, `tx_id=0x${TX}&tx_id=0x${TX2}`)).toBe(key);
    expect(keyOf('tx_multiple', {}, `tx_id=0x${TX}%2C0x${TX2}`)).toBe(key);
    // The upstream answers in its own order, but keys the answer by the requested ids: order is kept.
    expect(keyOf('tx_multiple', {}, `tx_id=0x${TX2},0x${TX}`)).not.toBe(key);
  });

  it('gives every spelling of one set of event types one key', () => {
    const base = `address=${ADDRESS}`;
    const key = keyOf('tx_events', {}, `${base}&type=stx_asset,stx_lock`);
    for (const form of ['type=stx_lock,stx_asset', 'type=stx_lock&type=stx_asset', 'type=stx_asset&type=stx_lock&type=stx_asset']) {
      expect(keyOf('tx_events', {}, `${base}&${form}`), form).toBe(key);
    }
    expect(keyOf('tx_events', {}, `${base}&type=stx_lock`)).not.toBe(key);
    expect(keyOf('tx_events', {}, `${base}&type[]=stx_lock`)).toBe(keyOf('tx_events', {}, base));
  });
});

/** The upstream path's segments (before the query), as sent. */
function pathSegments(upstreamPath: string): string[] {
  const at = upstreamPath.indexOf('?');
  return (at < 0 ? upstreamPath : upstreamPath.slice(0, at)).split('/');
}

/** Whole-segment dots are refused (any URL normaliser on the way would resolve them, even encoded). */
const DOT_SEGMENTS = ['..', '.'];

const HOSTILE_VALUES = [
  '../..',
  '../../v2/mempool/fees',
  '..%2F..',
  'a/b',
  '/',
  '%2F',
  '%2e%2e',
  'a?b=c',
  '?',
  'a#b',
  '#',
  'a b',
  '\\..\\..',
  'contrat-é',
  '合约.名称',
  '🚀',
  '\u0000',
  'a\r\nX-Injected: 1',
  '...',
  '.hidden',
];

describe('hostile path parameters never change the upstream path', () => {
  const contractTemplate = pathSegments(routeOf('contract_events').path);
  const transfersTemplate = pathSegments(routeOf('tx_with_transfers').path);

  it.each(DOT_SEGMENTS)('refuses contract_id %j with the upstream 400 shape, no request', (value) => {
    const outcome = validateRequest(routeOf('contract_events'), { contract_id: value }, '');
    expect(outcome).toEqual({
      kind: 'error',
      error: { status: 400, body: JSON.stringify({ statusCode: 400, error: 'Bad Request', message: 'params/contract_id must not be "." or ".."' }) },
    });
  });

  it.each(DOT_SEGMENTS)('prefixes with_transfers tx_id %j with 0x, so it is no dot segment', (value) => {
    const request = canonical('tx_with_transfers', { principal: ADDRESS, tx_id: value });
    expect(pathSegments(request.upstreamPath)[5]).toBe(`0x${value}`);
  });

  it.each(HOSTILE_VALUES.map((v) => [JSON.stringify(v), v]))('contract events with contract_id %s', (_name, value) => {
    const request = canonical('contract_events', { contract_id: value }, 'limit=5');
    const segments = pathSegments(request.upstreamPath);
    expect(segments).toHaveLength(contractTemplate.length);
    expect(segments).not.toContain('..');
    expect(segments).not.toContain('.');
    expect(segments.slice(0, 4)).toEqual(['', 'extended', 'v1', 'contract']);
    expect(segments[5]).toBe('events');
    expect(decodeURIComponent(segments[4] ?? '')).toBe(value);
    expect(request.upstreamPath.endsWith('/events?limit=5')).toBe(true);
    expect(request.upstreamPath).not.toMatch(/[\s#\u0000-\u001f]/);
  });

  it.each(HOSTILE_VALUES.map((v) => [JSON.stringify(v), v]))('with_transfers with tx_id %s', (_name, value) => {
    const request = canonical('tx_with_transfers', { principal: ADDRESS, tx_id: value });
    const segments = pathSegments(request.upstreamPath);
    expect(segments).toHaveLength(transfersTemplate.length);
    expect(segments).not.toContain('..');
    expect(segments).not.toContain('.');
    expect(segments.slice(0, 5)).toEqual(['', 'extended', 'v1', 'address', ADDRESS]);
    expect(segments[6]).toBe('with_transfers');
    expect(decodeURIComponent(segments[5] ?? '')).toBe(value.startsWith('0x') ? value : `0x${value}`);
    expect(request.upstreamPath).not.toContain('?');
    expect(request.upstreamPath).not.toMatch(/[\s#\u0000-\u001f]/);
  });

  it('makes no key of a principal that smuggles a slash in on the v2 address route: the passthrough forwards it as sent', () => {
    const value = `${ADDRESS}/../../../v2/mempool/fees`;
    expect(validateRequest(routeOf('address_transactions_v2'), { address: value }, '')).toEqual({ kind: 'passthrough' });
  });

  it('rejects such a principal where the handler checks it', () => {
    const outcome = validateRequest(routeOf('address_transactions'), { principal: `${ADDRESS}/../..` }, '');
    expect(outcome.kind).toBe('error');
  });

  it('keys different hostile values apart', () => {
    const keys = HOSTILE_VALUES.map((v) => keyOf('contract_events', { contract_id: v }));
    expect(new Set(keys).size).toBe(HOSTILE_VALUES.length);
  });
});
