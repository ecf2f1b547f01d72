/**
 * fast-check arbitraries for hostile requests, shared by the fuzz tests (test/fuzz/) and
 * `npm run fuzz` (scripts/fuzz.ts): request targets built from the 13 route templates with
 * anything in every parameter slot (percent-encodings valid and broken, dot segments, slashes
 * and backslashes, unicode, very long values), queries with repeated and conflicting
 * parameters, and non-route, passthrough and absolute-form targets.
 *
 * Known-good values (recorded principals, ids, heights) are mixed in on purpose, so that a good
 * share of the inputs passes validation and reaches the upstream: the properties are about what
 * the proxy sends on, not only about what it refuses.
 */
import fc from 'fast-check';
import { ROUTES } from '../../src/routes/route-table.js';
import { RECORDED } from '../fixtures.js';

export interface FuzzRequest {
  method: 'GET' | 'HEAD';
  /** The request target exactly as it goes on the wire (every char is one byte: see toWireTarget). */
  target: string;
  /** Where the input came from (a route id, `passthrough`, `other` or `absolute`), to group failures. */
  origin: string;
}

/**
 * Node's HTTP server refuses a request head over 16 KiB (431) before the proxy sees it, so
 * longer targets would test Node, not the proxy. The long values stay long: 15 KB is already
 * far beyond any parameter the upstream accepts.
 */
const MAX_TARGET_BYTES = 15_000;

/** One slot's share: a few long slots together still fit (longer targets are dropped). */
const MAX_SLOT_CHARS = 7_000;

const TX_NO_PREFIX = RECORDED.confirmedTxId.slice(2);

/** Values the recorded chain knows, so some inputs are valid and reach the upstream. */
const KNOWN_VALUES = [
  RECORDED.principal,
  RECORDED.principalWithoutTxs,
  RECORDED.contractId,
  RECORDED.principal.toLowerCase(),
  RECORDED.confirmedTxId,
  RECORDED.pendingTxId,
  RECORDED.unknownTxId,
  RECORDED.confirmedTxId.toUpperCase(),
  TX_NO_PREFIX,
  `0X${TX_NO_PREFIX}`,
  RECORDED.tipIndexHash,
  RECORDED.tipBlockHash,
  'latest',
  '0',
  '1',
  '21',
  '50',
  '51',
  '-1',
  '-0',
  '125',
  '106',
  '1e21',
  '1000000000000000000000',
  '9007199254740993',
  '0x10',
  ' 1',
  '1.5',
  // 61 digits: past 2^53 the double's digits differ from the client's.
  `1${'0'.repeat(60)}`,
  `00${'9'.repeat(40)}`,
  // The upstream's static segments next to parameters of the cached routes (its router prefers them).
  'mempool',
  'average-times',
  'multiple',
  'events',
  'stats',
  'raw',
  'by-block-time',
  'transactions_with_transfers',
];

const DOT_SEGMENTS = ['.', '..', '%2e', '%2E', '%2e%2e', '%2E%2E', '%2e%2E', '.%2e', '%2e.', '...', '.%00.'];
const PERCENT_ENCODINGS = [
  '%2F',
  '%2f',
  '%5c',
  '%5C',
  '%00',
  '%25',
  '%',
  '%2',
  '%zz',
  '%G0',
  '%e2%82',
  '%C3%A9',
  '%c3%a9',
  '%3F',
  '%3f',
  '%23',
  '%20',
  '%2B',
  '+',
  '%252e',
  '%252F',
  '%u002e',
  '%c0%ae',
  '%ff',
  '%0a',
  '%0d%0a',
  '%3B',
  '%26',
  '%3D',
];
const SPECIAL_CHARS = ['/', '//', '\\', '\\\\', '?', '#', '&', '=', ';', ',', ' ', '\t', '\u0000', '\r\n', '@', ':', '~', '"', '<', "'", '*', '{', '|'];
const UNICODE = ['é', 'ü', '日本', '🙂', '\u200b', '\ufeff', 'İ', 'ﬀ', 'Ａ', '\u202e', '\ud800', '．', '／', '＼'];
const EVENT_TYPES = ['smart_contract_log', 'stx_lock', 'stx_asset', 'fungible_token_asset', 'non_fungible_token_asset'];

/** A value many times longer than any the upstream accepts. */
const longValue = fc
  .tuple(
    fc.constantFrom('a', '0', '1', 'S', '%2e', '.', '/', 'ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84', 'é', 'f'),
    fc.integer({ min: 100, max: MAX_SLOT_CHARS }),
  )
  .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)));

const piece: fc.Arbitrary<string> = fc.oneof(
  { withCrossShrink: true },
  { arbitrary: fc.constantFrom(...KNOWN_VALUES), weight: 4 },
  { arbitrary: fc.constantFrom(...DOT_SEGMENTS), weight: 2 },
  { arbitrary: fc.constantFrom(...PERCENT_ENCODINGS), weight: 2 },
  { arbitrary: fc.constantFrom(...SPECIAL_CHARS), weight: 2 },
  { arbitrary: fc.constantFrom(...UNICODE), weight: 1 },
  { arbitrary: fc.string({ maxLength: 12 }), weight: 2 },
  // Any code point, lone surrogates included (fc.string's 'binary' unit costs seconds to set up).
  { arbitrary: fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength: 6 }).map((codes) => String.fromCodePoint(...codes)), weight: 1 },
  { arbitrary: fc.stringMatching(/^(0x)?[0-9a-fA-F]{0,70}$/), weight: 1 },
  { arbitrary: fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String), weight: 1 },
);

/** Percent-encodes every UTF-8 byte of `text`, in upper or lower case hex. */
function encodeEveryByte(text: string, lower: boolean): string {
  const hex = [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
  return lower ? hex : hex.toUpperCase();
}

/** How a slot value is spelled: as is (raw), the way a client library encodes it, or fully encoded. */
const spelled = (value: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { withCrossShrink: true },
    { arbitrary: value, weight: 6 },
    { arbitrary: value.map((v) => encodeURIComponent(v.replace(/[\ud800-\udfff]/g, ''))), weight: 2 },
    { arbitrary: fc.tuple(value, fc.boolean()).map(([v, lower]) => encodeEveryByte(v, lower)), weight: 1 },
  );

/** Anything a client could put in one path or query slot (cut to stay within MAX_TARGET_BYTES). */
export const slotValue: fc.Arbitrary<string> = spelled(
  fc.oneof(
    { withCrossShrink: true },
    { arbitrary: fc.constantFrom(...KNOWN_VALUES), weight: 5 },
    { arbitrary: fc.array(piece, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')), weight: 5 },
    { arbitrary: fc.constant(''), weight: 1 },
    { arbitrary: longValue, weight: 1 },
  ),
).map((value) => value.slice(0, MAX_SLOT_CHARS));

const numberish = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '20',
    '50',
    '51',
    '100',
    '101',
    '-1',
    '-0',
    '+1',
    '01',
    '1.0',
    '1.5',
    '1e3',
    '1e21',
    '0x10',
    ' 1',
    '1 ',
    'Infinity',
    'NaN',
    '',
    '9007199254740993',
    '1000000000000000000000',
  ),
  fc.integer().map(String),
  fc.bigInt({ min: 0n, max: 10n ** 30n }).map(String),
);
const booleanish = fc.constantFrom('true', 'false', 'TRUE', 'False', '1', '0', 'yes', '', 'true,false');
const txIdish = fc.constantFrom(
  RECORDED.confirmedTxId,
  RECORDED.pendingTxId,
  RECORDED.unknownTxId,
  TX_NO_PREFIX,
  RECORDED.confirmedTxId.toUpperCase(),
  '0x',
  '0xabc',
  'zz',
);
/** `tx_id` lists: repeated keys and comma forms are mixed by the query builder. */
const txIdList = fc.array(txIdish, { minLength: 1, maxLength: 4 }).map((ids) => ids.join(','));
const eventTypes = fc.array(fc.constantFrom(...EVENT_TYPES, 'bogus', ''), { minLength: 1, maxLength: 3 }).map((t) => t.join(','));

const queryValue = fc.oneof(
  { withCrossShrink: true },
  { arbitrary: numberish, weight: 4 },
  { arbitrary: booleanish, weight: 2 },
  { arbitrary: txIdList, weight: 3 },
  { arbitrary: eventTypes, weight: 1 },
  { arbitrary: fc.constantFrom(RECORDED.principal, RECORDED.contractId, RECORDED.tipIndexHash, 'cursor-1'), weight: 2 },
  { arbitrary: slotValue, weight: 3 },
);

const COMMON_QUERY_NAMES = [
  'limit',
  'offset',
  'tx_id',
  'unanchored',
  'until_block',
  'height',
  'cursor',
  'type',
  'address',
  'event_limit',
  'event_offset',
  'exclude_function_args',
];
const HOSTILE_QUERY_NAMES = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'LIMIT',
  'limit[]',
  'limit%00',
  'li%6dit',
  'tx_id[0]',
  '',
  'limit ',
  '%74x_id',
  'a'.repeat(300),
];

interface QueryPair {
  name: string;
  value: string | null;
}

/** A query for one route: its own names weighted up, so repeats and conflicts are common. */
function queryFor(names: readonly string[]): fc.Arbitrary<string> {
  const name = fc.oneof(
    { withCrossShrink: true },
    { arbitrary: fc.constantFrom(...(names.length > 0 ? names : COMMON_QUERY_NAMES)), weight: 6 },
    { arbitrary: fc.constantFrom(...COMMON_QUERY_NAMES), weight: 2 },
    { arbitrary: fc.constantFrom(...HOSTILE_QUERY_NAMES), weight: 1 },
  );
  const pair: fc.Arbitrary<QueryPair> = fc.record({
    name,
    value: fc.option(queryValue, { freq: 12, nil: null }),
  });
  return fc
    .tuple(fc.array(pair, { maxLength: 7 }), fc.constantFrom('&', '&', '&', '&&', ';'), fc.constantFrom('?', '?', '?', '?', '??', '?&'))
    .map(([pairs, separator, mark]) => {
      if (pairs.length === 0) return '';
      return mark + pairs.map(({ name: n, value }) => (value === null ? n : `${n}=${value}`)).join(separator);
    });
}

/** A change to an assembled path of the kinds attackers use to get a second reading of it. */
type PathMutation = (path: string, at: number) => string;

const slashPositions = (path: string): number[] => [...path].flatMap((char, index) => (char === '/' ? [index] : []));
const atSlash = (path: string, at: number): number => {
  const positions = slashPositions(path);
  return positions.length === 0 ? 0 : (positions[at % positions.length] ?? 0);
};

const PATH_MUTATIONS: Record<string, PathMutation> = {
  doubleSlash: (p, at) => `${p.slice(0, atSlash(p, at))}/${p.slice(atSlash(p, at))}`,
  backslash: (p, at) => `${p.slice(0, atSlash(p, at))}\\${p.slice(atSlash(p, at) + 1)}`,
  encodedBackslash: (p, at) => `${p.slice(0, atSlash(p, at))}%5C${p.slice(atSlash(p, at) + 1)}`,
  encodedSlash: (p, at) => `${p.slice(0, atSlash(p, at))}%2F${p.slice(atSlash(p, at) + 1)}`,
  dot: (p, at) => `${p.slice(0, atSlash(p, at))}/.${p.slice(atSlash(p, at))}`,
  encodedDot: (p, at) => `${p.slice(0, atSlash(p, at))}/%2e${p.slice(atSlash(p, at))}`,
  upAndBack: (p, at) => `${p.slice(0, atSlash(p, at))}/x/..${p.slice(atSlash(p, at))}`,
  encodedUpAndBack: (p, at) => `${p.slice(0, atSlash(p, at))}/x/%2e%2E${p.slice(atSlash(p, at))}`,
  up: (p, at) => `${p.slice(0, atSlash(p, at))}/..${p.slice(atSlash(p, at))}`,
  backslashUp: (p, at) => `${p.slice(0, atSlash(p, at))}\\..${p.slice(atSlash(p, at))}`,
  trailingSlash: (p) => `${p}/`,
  trailingDot: (p) => `${p}/.`,
  /** One letter of the path percent-encoded: the upstream's router decodes it before matching. */
  encodedLetter: (p, at) => {
    const letters = [...p].flatMap((char, index) => (/[a-z]/.test(char) ? [index] : []));
    if (letters.length === 0) return p;
    const index = letters[at % letters.length] ?? 0;
    const code = p.charCodeAt(index).toString(16);
    return `${p.slice(0, index)}%${at % 2 === 0 ? code : code.toUpperCase()}${p.slice(index + 1)}`;
  },
  upperCase: (p, at) => {
    const index = atSlash(p, at) + 1;
    return `${p.slice(0, index)}${p.charAt(index).toUpperCase()}${p.slice(index + 1)}`;
  },
};

const pathMutations = fc.array(fc.tuple(fc.constantFrom(...Object.keys(PATH_MUTATIONS)), fc.nat()), { maxLength: 3 });
const mutate = (path: string, mutations: Array<[string, number]>): string => mutations.reduce((p, [name, at]) => PATH_MUTATIONS[name]?.(p, at) ?? p, path);

/** One route's template with every `:param` slot filled, maybe mutated, with a query. */
function routeTarget(path: string, queryNames: readonly string[]): fc.Arbitrary<string> {
  const slots = path.split('/').filter((segment) => segment.startsWith(':')).length;
  return fc
    .tuple(fc.array(slotValue, { minLength: slots, maxLength: slots }), fc.option(pathMutations, { freq: 2, nil: [] }), queryFor(queryNames))
    .map(([values, mutations, query]) => {
      let index = 0;
      const filled = path
        .split('/')
        .map((segment) => (segment.startsWith(':') ? (values[index++] ?? '') : segment))
        .join('/');
      return mutate(filled, mutations) + query;
    });
}

const routeRequests = ROUTES.map((route) => {
  const names = [...route.query.map((q) => q.name), ...(route.undeclaredQuery ?? [])];
  return routeTarget(route.path, names).map((target) => ({ target, origin: route.id }));
});

/** Paths of the upstream's public surface, its other routes, and ones nothing should forward. */
const OTHER_PREFIXES = [
  '/extended',
  '/extended/',
  '/extended/v1/status',
  '/extended/v1/ws',
  '/socket.io/',
  '/v2/info',
  '/v2/accounts/',
  '/v1/',
  '/v3/',
  '/rosetta/v1/network/list',
  '/extended/v1/address/',
  '/extended/v1/tx/',
  '/extended/v2/blocks/',
  '/extended/v1/block/',
  '/',
  '/health',
  '/ready',
  '/metrics',
  '/admin',
  '/.env',
  '/favicon.ico',
  '/extendedX',
  '/EXTENDED/v2/blocks/1',
  '/v2',
  '/socket.io',
  '/%65xtended/v2/mempool/fees',
  '/extended/v2/mempool/fe%65s',
  '/extended%2Fv2%2Fmempool%2Ffees',
];

const otherRequests = fc
  .tuple(fc.constantFrom(...OTHER_PREFIXES), fc.array(slotValue, { maxLength: 3 }), fc.option(pathMutations, { freq: 2, nil: [] }), queryFor([]))
  .map(([prefix, segments, mutations, query]) => {
    const path = segments.length === 0 ? prefix : `${prefix.replace(/\/$/, '')}/${segments.join('/')}`;
    const origin = /^\/(extended|v1\/|v2\/|v3\/|rosetta\/|socket\.io\/)/.test(prefix) ? 'passthrough' : 'other';
    return { target: mutate(path, mutations) + query, origin };
  });

/** Absolute-form and other targets that are not a plain origin-form path. */
const absoluteRequests = fc
  .tuple(
    fc.constantFrom(
      'http://127.0.0.1:1',
      'http://evil.example',
      'HTTP://evil.example',
      'https://evil.example:443',
      '//evil.example',
      'http:',
      'evil.example',
      '*',
      'http://user:pass@evil.example',
    ),
    fc.oneof(fc.constantFrom(...OTHER_PREFIXES), ...routeRequests.map((arb) => arb.map((r) => r.target))),
  )
  .map(([authority, rest]) => ({ target: authority === '*' ? '*' : `${authority}${rest}`, origin: 'absolute' }));

/**
 * What can be put on a request line: a request target cannot carry spaces or control
 * characters (they are sent percent-encoded), and non-ASCII text goes as its raw UTF-8 bytes,
 * one char per byte, as node:http writes a latin1 string.
 */
export function toWireTarget(target: string): string {
  let wire = '';
  for (const char of target) {
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0x20 || code === 0x7f) wire += `%${code.toString(16).padStart(2, '0').toUpperCase()}`;
    else if (code < 0x80) wire += char;
    else wire += Buffer.from(char, 'utf8').toString('latin1');
  }
  return wire === '' ? '/' : wire;
}

/** Every request the fuzzers send: mostly the 13 routes, then other paths, then absolute forms. */
export function fuzzRequest(): fc.Arbitrary<FuzzRequest> {
  return fc
    .tuple(
      fc.oneof(
        { withCrossShrink: true },
        { arbitrary: fc.oneof(...routeRequests), weight: 7 },
        { arbitrary: otherRequests, weight: 2 },
        { arbitrary: absoluteRequests, weight: 1 },
      ),
      fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'GET', 'GET', 'HEAD'),
    )
    .map(([{ target, origin }, method]) => ({ method, target: toWireTarget(target), origin }))
    .filter((request) => request.target.length <= MAX_TARGET_BYTES);
}

/** A path and query as the route matcher and validator see them (no wire conversion), for the pure tests. */
export function pathAndQuery(): fc.Arbitrary<{ path: string; query: string }> {
  return fc.oneof(fc.oneof(...routeRequests), otherRequests).map(({ target }) => {
    const mark = target.indexOf('?');
    return mark < 0 ? { path: target, query: '' } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
  });
}
