/**
 * Purge predicates over canonical keys (src/cache/purge.ts), the purge request's parsing
 * (src/http/admin/purge-request.ts) and the admin token check: pure, no I/O.
 */
import { describe, expect, it } from 'vitest';
import { escapeGlob, purgeMatcher, type PurgeSelector } from '../../src/cache/purge.js';
import { bearerTokenCheck } from '../../src/http/admin/admin-token.js';
import { parsePurgeRequest } from '../../src/http/admin/purge-request.js';
import { matchSurface, subjectsOf, surfaceKey } from '../../src/surface/plan.js';

const TX = `0x${'ab'.repeat(32)}`;
const OTHER_TX = `0x${'cd'.repeat(32)}`;
const P = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const CONTRACT = `${P}.pox-4`;
const k = (rest: string) => `scp:v2:${rest}`;

/** Keys of every kind, as key.ts builds them. */
const KEYS = {
  tx: k(`tx:${TX}`),
  txQuery: k(`tx:${TX}?event_limit=5`),
  otherTx: k(`tx:${OTHER_TX}`),
  txPrefixOfOther: k(`tx:${TX}ff`),
  listMember: k(`tx_list_member:${TX}`),
  wholeList: k(`tx_multiple:/extended/v1/tx/multiple?tx_id=${TX.toUpperCase().replace('0X', '0x')},${OTHER_TX}`),
  otherList: k(`tx_multiple:/extended/v1/tx/multiple?tx_id=${OTHER_TX}`),
  withTransfers: k(`tx_with_transfers:/extended/v1/address/${P}/${TX}/with_transfers`),
  eventsOfTx: k(`tx_events:/extended/v1/tx/events?tx_id=${TX}`),
  eventsOfAddress: k(`tx_events:/extended/v1/tx/events?address=${P}&limit=5`),
  stx: k(`address_stx_balance:/extended/v1/address/${P}/stx`),
  balances: k(`address_balances:/extended/v1/address/${P}/balances?unanchored=true`),
  transactions: k(`address_transactions:/extended/v1/address/${P}/transactions?limit=5`),
  transactionsV2: k(`address_transactions_v2:/extended/v2/addresses/${P}/transactions`),
  contractEvents: k(`contract_events:/extended/v1/contract/${CONTRACT}/events`),
  contractStx: k(`address_stx_balance:/extended/v1/address/${CONTRACT}/stx`),
  longerPrincipal: k(`address_stx_balance:/extended/v1/address/${P}X/stx`),
  block1: k('block:/extended/v2/blocks/1'),
  block10: k('block:/extended/v2/blocks/10'),
  blockHash: k(`block:/extended/v2/blocks/${TX}`),
  burn: k('block_by_burn_height:/extended/v1/block/by_burn_block_height/7'),
  fees: k('mempool_fees:/extended/v2/mempool/fees'),
  lock: k(`tx:${TX}:lock`),
  oldSchema: `scp:v1:tx:${TX}`,
  otherPrefix: `other:v2:tx:${TX}`,
};
type Name = keyof typeof KEYS;

function matched(selector: PurgeSelector): Name[] {
  const { matches } = purgeMatcher('scp', selector);
  return (Object.keys(KEYS) as Name[]).filter((name) => matches(KEYS[name]));
}

/** Redis glob semantics, enough for the patterns purge.ts writes (`*` and escapes). */
function globMatches(pattern: string, key: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i]!;
    if (c === '\\') source += pattern[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '*') source += '.*';
    else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's').test(key);
}

describe('purge predicates', () => {
  it('tx: the per-transaction entries under every query, list members, whole lists naming it, with_transfers, events by tx id', () => {
    expect(matched({ kind: 'tx', txId: TX })).toEqual(['tx', 'txQuery', 'listMember', 'wholeList', 'withTransfers', 'eventsOfTx']);
  });

  it('principal: every address route, v2 transactions, events by address; a contract principal its contract events', () => {
    expect(matched({ kind: 'principal', principal: P })).toEqual(['withTransfers', 'eventsOfAddress', 'stx', 'balances', 'transactions', 'transactionsV2']);
    expect(matched({ kind: 'principal', principal: CONTRACT })).toEqual(['contractEvents', 'contractStx']);
  });

  it('route: its own entries, and for /tx/{id} and tx/multiple the entries they share', () => {
    expect(matched({ kind: 'route', route: 'block' })).toEqual(['block1', 'block10', 'blockHash']);
    expect(matched({ kind: 'route', route: 'tx_by_id' })).toEqual(['tx', 'txQuery', 'otherTx', 'txPrefixOfOther']);
    expect(matched({ kind: 'route', route: 'tx_multiple' })).toEqual(['tx', 'txQuery', 'otherTx', 'txPrefixOfOther', 'listMember', 'wholeList', 'otherList']);
  });

  it("block and keys: exactly the keys named, deleted without a SCAN (a block's SCAN looks for surface entries only)", () => {
    const block = purgeMatcher('scp', { kind: 'block', refs: ['1', TX], burnHeights: [7] });
    expect(block.patterns).toEqual(['scp:v2:s:*,b=1,*', `scp:v2:s:*,b=${TX},*`]);
    expect(block.keys).toEqual([KEYS.block1, KEYS.blockHash, KEYS.burn]);
    expect(matched({ kind: 'block', refs: ['1', TX], burnHeights: [7] })).toEqual(['block1', 'blockHash', 'burn']);
    expect(matched({ kind: 'keys', keys: [KEYS.fees] })).toEqual(['fees']);
  });

  it('all: every entry of this prefix and schema, never a lock, another schema or another prefix', () => {
    expect(matched({ kind: 'all' })).toEqual((Object.keys(KEYS) as Name[]).filter((name) => !['lock', 'oldSchema', 'otherPrefix'].includes(name)));
  });

  it('SCAN patterns cover every key the predicate accepts', () => {
    const selectors: PurgeSelector[] = [
      { kind: 'tx', txId: TX },
      { kind: 'principal', principal: P },
      { kind: 'principal', principal: CONTRACT },
      { kind: 'route', route: 'tx_multiple' },
      { kind: 'route', route: 'block' },
      { kind: 'all' },
    ];
    for (const selector of selectors) {
      const matcher = purgeMatcher('scp', selector);
      for (const key of Object.values(KEYS).filter(matcher.matches)) {
        expect(
          matcher.patterns.some((pattern) => globMatches(pattern, key)),
          `${selector.kind} ${key}`,
        ).toBe(true);
      }
    }
  });

  it('escapes glob characters', () => {
    expect(escapeGlob('a*b?c[d]e\\f')).toBe('a\\*b\\?c\\[d\\]e\\\\f');
  });
});

/** The key the surface keeps a request's entry under (surface/plan.ts), at a tip when given. */
function surface(method: 'GET' | 'POST', url: string, tip?: string): string {
  const mark = url.indexOf('?');
  const [path, query] = mark < 0 ? [url, ''] : [url.slice(0, mark), url.slice(mark + 1)];
  const match = matchSurface(method, path, query);
  if (!match) throw new Error(`no family for ${url}`);
  return surfaceKey({
    prefix: 'scp',
    method,
    family: match.family,
    url,
    subjects: subjectsOf(match, query),
    tip: tip === undefined ? undefined : { hash: tip },
  });
}

const SHORTER = P.slice(0, -1);
const LONG_QUERY = `limit=50&${'x'.repeat(600)}=1`;
const SURFACE = {
  nonces: surface('GET', `/extended/v1/address/${P}/nonces`),
  noncesV3: surface('GET', `/extended/v3/principals/${P}/nonces`),
  noncesLowerCase: surface('GET', `/extended/v1/address/${P.toLowerCase()}/nonces`),
  noncesEscaped: surface('GET', `/extended/v1/address/%53${P.slice(1)}/nonces`),
  accounts: surface('GET', `/v2/accounts/${P}?proof=0`, '0xt1'),
  mempoolOfP: surface('GET', `/extended/v1/tx/mempool?address=${P}`),
  holdings: surface('GET', `/extended/v1/tokens/nft/holdings?principal=${P}&limit=5`),
  historyLong: surface('GET', `/extended/v1/address/${P}/transactions_with_transfers?${LONG_QUERY}`),
  balanceChanges: surface('GET', `/extended/v3/principals/${P}/transactions/${TX}/balance-changes`),
  // A principal that is a prefix of P (SP…A and SP…AB): never P's, and P's never its.
  shorterNonces: surface('GET', `/extended/v1/address/${SHORTER}/nonces`),
  mempoolOfShorter: surface('GET', `/extended/v1/tx/mempool?address=${SHORTER}`),
  mempoolTwoAddresses: surface('GET', `/extended/v1/tx/mempool?address=${P}&address=${SHORTER}`),
  mempoolAll: surface('GET', '/extended/v1/tx/mempool?limit=20'),
  contractInterface: surface('GET', `/v2/contracts/interface/${P}/pox-4`),
  callRead: surface('POST', `/v2/contracts/call-read/${P}/pox-4/get-pox-info`, '0xt1'),
  contractInfo: surface('GET', `/extended/v1/contract/${CONTRACT}`),
  contractOfLonger: surface('GET', `/v2/contracts/source/${P}/pox-4x?proof=0`),
  raw: surface('GET', `/extended/v1/tx/${TX}/raw`),
  rawWithout0x: surface('GET', `/extended/v1/tx/${TX.slice(2).toUpperCase()}/raw`),
  txV3: surface('GET', `/extended/v3/transactions/${TX}/events?limit=5`),
  rawOther: surface('GET', `/extended/v1/tx/${OTHER_TX}/raw`),
  block1Txs: surface('GET', '/extended/v2/blocks/1/transactions?limit=50'),
  block1TxsPadded: surface('GET', '/extended/v3/blocks/001/transactions'),
  block10Txs: surface('GET', '/extended/v2/blocks/10/transactions'),
  blockHashSignatures: surface('GET', `/extended/v2/blocks/${TX.slice(2)}/signer-signatures`),
  tenure1: surface('GET', '/extended/v2/block-tenures/1/blocks'),
  info: surface('GET', '/v2/info', '0xt1'),
};
type SurfaceName = keyof typeof SURFACE;
function matchedSurface(selector: PurgeSelector): SurfaceName[] {
  const { matches } = purgeMatcher('scp', selector);
  return (Object.keys(SURFACE) as SurfaceName[]).filter((name) => matches(SURFACE[name]));
}

describe('purge predicates on the surface (route families)', () => {
  it("principal: every family's entries naming it, in the path or ?address= / ?principal=, however spelt, long URLs too; never another principal's", () => {
    expect(matchedSurface({ kind: 'principal', principal: P })).toEqual([
      'nonces',
      'noncesV3',
      'noncesLowerCase',
      'noncesEscaped',
      'accounts',
      'mempoolOfP',
      'holdings',
      'historyLong',
      'balanceChanges',
    ]);
    expect(SURFACE.historyLong).toMatch(/:~[A-Za-z0-9_-]{43}$/); // its URL is hashed away; the subject is not
    expect(matchedSurface({ kind: 'principal', principal: CONTRACT })).toEqual(['contractInterface', 'callRead', 'contractInfo']);
    expect(matchedSurface({ kind: 'principal', principal: SHORTER })).toEqual(['shorterNonces', 'mempoolOfShorter']);
  });

  it("tx: the transaction's raw bytes and v3 details, under any spelling of its id; not another's", () => {
    expect(matchedSurface({ kind: 'tx', txId: TX })).toEqual(['balanceChanges', 'raw', 'rawWithout0x', 'txV3']);
  });

  it('block: block_transactions and block_detail entries naming one of its refs (a height however padded); not another height, not a tenure', () => {
    expect(matchedSurface({ kind: 'block', refs: ['1', TX], burnHeights: [] })).toEqual(['block1Txs', 'block1TxsPadded', 'blockHashSignatures']);
  });

  it('route: a family id purges that family, and nothing else', () => {
    expect(matchedSurface({ kind: 'route', route: 'address_nonces' })).toEqual(['nonces', 'noncesV3', 'noncesLowerCase', 'noncesEscaped', 'shorterNonces']);
    expect(matchedSurface({ kind: 'route', route: 'block' })).toEqual([]);
    expect(matched({ kind: 'route', route: 'address_nonces' })).toEqual([]);
  });

  it('all: every surface entry; SCAN patterns cover every key each predicate accepts', () => {
    expect(matchedSurface({ kind: 'all' })).toEqual(Object.keys(SURFACE));
    const selectors: PurgeSelector[] = [
      { kind: 'principal', principal: P },
      { kind: 'principal', principal: CONTRACT },
      { kind: 'tx', txId: TX },
      { kind: 'block', refs: ['1', TX], burnHeights: [] },
      { kind: 'route', route: 'address_nonces' },
    ];
    for (const selector of selectors) {
      const matcher = purgeMatcher('scp', selector);
      for (const key of Object.values(SURFACE).filter(matcher.matches)) {
        expect(
          matcher.patterns.some((pattern) => globMatches(pattern, key)),
          `${selector.kind} ${key}`,
        ).toBe(true);
      }
    }
  });

  it("the 13 routes' selectors keep their own matches", () => {
    expect(matched({ kind: 'principal', principal: P })).toEqual(['withTransfers', 'eventsOfAddress', 'stx', 'balances', 'transactions', 'transactionsV2']);
  });
});

describe('purge requests', () => {
  it('url: the canonical key of the request, however it is spelled', () => {
    expect(parsePurgeRequest(`{"url":"/extended/v1/address/${P}/transactions?offset=0&limit=5"}`, 'scp')).toEqual({
      kind: 'selector',
      selector: { kind: 'keys', keys: [KEYS.transactions] },
    });
    expect(parsePurgeRequest(`{"url":"/extended/v1/tx/${TX.toUpperCase().replace('0X', '0x')}?event_limit=5"}`, 'scp')).toEqual({
      kind: 'selector',
      selector: { kind: 'keys', keys: [KEYS.txQuery] },
    });
    expect(parsePurgeRequest('{"url":"/extended//v2/./blocks/1"}', 'scp')).toEqual({ kind: 'selector', selector: { kind: 'keys', keys: [KEYS.block1] } });
  });

  it('url of a tx/multiple list: the whole list and each member where it may be kept', () => {
    expect(parsePurgeRequest(`{"url":"/extended/v1/tx/multiple?tx_id=${TX}"}`, 'scp')).toEqual({
      kind: 'selector',
      selector: { kind: 'keys', keys: [k(`tx_multiple:/extended/v1/tx/multiple?tx_id=${TX}`), KEYS.tx, KEYS.listMember] },
    });
  });

  it('tx_id, principal, block, route and all', () => {
    expect(parsePurgeRequest(`{"tx_id":"${TX.slice(2).toUpperCase()}"}`, 'scp')).toEqual({ kind: 'selector', selector: { kind: 'tx', txId: TX } });
    expect(parsePurgeRequest(`{"principal":"${CONTRACT}"}`, 'scp')).toEqual({ kind: 'selector', selector: { kind: 'principal', principal: CONTRACT } });
    expect(parsePurgeRequest('{"block":12}', 'scp')).toEqual({ kind: 'block', ref: '12' });
    expect(parsePurgeRequest('{"block":"012"}', 'scp')).toEqual({ kind: 'block', ref: '12' });
    expect(parsePurgeRequest(`{"block":"${TX.slice(2).toUpperCase()}"}`, 'scp')).toEqual({ kind: 'block', ref: TX });
    expect(parsePurgeRequest('{"route":"mempool_fees"}', 'scp')).toEqual({ kind: 'selector', selector: { kind: 'route', route: 'mempool_fees' } });
    expect(parsePurgeRequest('{"route":"address_nonces"}', 'scp')).toEqual({ kind: 'selector', selector: { kind: 'route', route: 'address_nonces' } });
    expect(parsePurgeRequest('{"all":true}', 'scp')).toEqual({ kind: 'selector', selector: { kind: 'all' } });
  });

  it.each([
    ['{"block":-1}', 'block must be'],
    ['{"block":1.5}', 'block must be'],
    ['{"url":5}', 'url must be a string'],
    ['{"url":"/extended/v2/blocks/1 "}', "url '/extended/v2/blocks/1 ' is not a valid request target"],
    ['{"principal":"SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ8"}', 'principal must be'],
    ['{"route":"constructor"}', 'route must be one of'],
    ['{"route":"broadcast"}', 'route must be one of'],
    ['{"route":"s"}', 'route must be one of'],
    ['null', 'body must be a JSON object'],
  ])('refuses %s', (body, message) => {
    const parsed = parsePurgeRequest(body, 'scp');
    expect(parsed.kind).toBe('invalid');
    expect(parsed.kind === 'invalid' && parsed.message.startsWith(message), JSON.stringify(parsed)).toBe(true);
  });
});

describe('the admin token check', () => {
  const check = bearerTokenCheck('s3cret-token-0123456789');
  it.each([
    [undefined, false],
    ['', false],
    ['Bearer', false],
    ['Bearer ', false],
    ['Bearer s3cret-token-012345678', false],
    ['Bearer s3cret-token-01234567890', false],
    ['Basic s3cret-token-0123456789', false],
    ['Bearer s3cret-token-0123456789 extra', false],
    ['Bearer s3cret-token-0123456789', true],
    ['bearer  s3cret-token-0123456789', true],
  ])('%s -> %s', (header, expected) => {
    expect(check(header)).toBe(expected);
  });
});
