/**
 * Every parameter kind, valid and invalid, through `validateRequest`: the proxy must answer
 * invalid input with the upstream's exact status and body (upstream-contract §1.2, §1.3, §2,
 * §4) and turn valid input into one canonical upstream request.
 */
import { describe, expect, it } from 'vitest';
import type { ValidationOutcome } from '../../src/routes/validate.js';
import { requestOf, validateRoute } from '../support/validate-route.js';

const ADDRESS = 'ST000000000000000000002AMW42H';
const OTHER_ADDRESS = 'ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84';
/** ADDRESS with its last (checksum) character changed: passes the pattern, fails c32check. */
const BAD_CHECKSUM = 'ST000000000000000000002AMW42J';
const CONTRACT = `${ADDRESS}.pox-4`;
const TX = 'cba511741b230bd85cb5b3b10d26e0b92695d4a83f95c260cad82a40cd764235';
const TX2 = 'f767164c588e43b1af80e466e59f120037c17bd49b25b1529543132a2aa331a8';
const TX_PATTERN = '^(0x)?[a-fA-F0-9]{64}$';
const ADDRESS_PATTERN = '^[0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}';
const CONTRACT_PATTERN = '^[0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}.[a-zA-Z]([a-zA-Z0-9]|[-_]){0,39}$';

const run = validateRoute;

const pathOf = (outcome: ValidationOutcome): string => requestOf(outcome).upstreamPath;

/** Ajv schema failure as Fastify serializes it. */
const schemaError = (message: string): ValidationOutcome => ({
  kind: 'error',
  error: { status: 400, body: JSON.stringify({ statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message }) },
});

/** InvalidRequestError thrown by an upstream handler (no `code`). */
const handlerError = (message: string): ValidationOutcome => ({
  kind: 'error',
  error: { status: 400, body: JSON.stringify({ statusCode: 400, error: 'Bad Request', message }) },
});

const principalPatternMessage = (location: string): string =>
  `${location} must match pattern "${ADDRESS_PATTERN}", ${location} must match pattern "${CONTRACT_PATTERN}", ${location} must match a schema in anyOf`;

const TXS_V1 = '/extended/v1/address/ST000000000000000000002AMW42H/transactions';
const addressTxs = (query: string): ValidationOutcome => run('address_transactions', { principal: ADDRESS }, query);

describe('integer parameters (limit, offset, height, event_limit, burn_block_height)', () => {
  it.each([
    ['limit=5', `${TXS_V1}?limit=5`],
    ['limit=50', `${TXS_V1}?limit=50`],
    ['offset=7', `${TXS_V1}?offset=7`],
    ['height=12', `${TXS_V1}?height=12`],
    // Ajv coerces any string that equals its numeric value.
    ['limit=1e1', `${TXS_V1}?limit=10`],
    // The client's digits are forwarded as sent (the upstream reads them as 5); the key has 5.
    ['limit=05', `${TXS_V1}?limit=05`],
  ])('accepts %s as %s', (query, upstreamPath) => {
    expect(pathOf(addressTxs(query))).toBe(upstreamPath);
  });

  it('keys every spelling of a number by its digits', () => {
    for (const query of ['limit=5', 'limit=05', 'limit=5e0', 'limit=0x5', 'limit=%205']) {
      expect(requestOf(addressTxs(query)).canonicalPath, query).toBe(`${TXS_V1}?limit=5`);
    }
  });

  it.each([
    ['limit=abc', 'querystring/limit must be integer'],
    ['limit=1.5', 'querystring/limit must be integer'],
    ['limit=', 'querystring/limit must be integer'],
    ['limit', 'querystring/limit must be integer'],
    ['limit=Infinity', 'querystring/limit must be integer'],
    ['limit=-1', 'querystring/limit must be >= 0'],
    ['limit=51', 'querystring/limit must be <= 50'],
    ['limit=100000', 'querystring/limit must be <= 50'],
    // A repeated key is an array of two: Ajv's 'array' coercion only unwraps single items.
    ['limit=1&limit=2', 'querystring/limit must be integer'],
    ['offset=-1', 'querystring/offset must be >= 0'],
    ['offset=x', 'querystring/offset must be integer'],
    ['height=abc', 'querystring/height must be integer'],
  ])('rejects %s with "%s"', (query, message) => {
    expect(addressTxs(query)).toEqual(schemaError(message));
  });

  it('reports the first failing key in schema order (limit before offset)', () => {
    expect(addressTxs('offset=-1&limit=abc')).toEqual(schemaError('querystring/limit must be integer'));
  });

  it('uses the per-route maximum', () => {
    const events = (q: string) => run('tx_events', {}, `address=${ADDRESS}&${q}`);
    expect(pathOf(events('limit=100'))).toBe(`/extended/v1/tx/events?address=${ADDRESS}&limit=100`);
    expect(events('limit=101')).toEqual(schemaError('querystring/limit must be <= 100'));
    expect(run('contract_events', { contract_id: CONTRACT }, 'limit=51')).toEqual(schemaError('querystring/limit must be <= 50'));
    expect(run('tx_by_id', { tx_id: `0x${TX}` }, 'event_limit=101')).toEqual(schemaError('querystring/event_limit must be <= 100'));
    expect(pathOf(run('tx_by_id', { tx_id: `0x${TX}` }, 'event_limit=100'))).toBe(`/extended/v1/tx/0x${TX}?event_limit=100`);
  });

  it.each([
    ['abc', 'params/burn_block_height must be integer'],
    ['-1', 'params/burn_block_height must be >= 0'],
    ['1.5', 'params/burn_block_height must be integer'],
    ['', 'params/burn_block_height must be integer'],
  ])('rejects burn_block_height %j', (value, message) => {
    expect(run('block_by_burn_height', { burn_block_height: value })).toEqual(schemaError(message));
  });

  it('accepts burn_block_height 0 and canonicalizes the number', () => {
    expect(pathOf(run('block_by_burn_height', { burn_block_height: '0' }))).toBe('/extended/v1/block/by_burn_block_height/0');
    expect(pathOf(run('block_by_burn_height', { burn_block_height: '0125' }))).toBe('/extended/v1/block/by_burn_block_height/0125');
    expect(requestOf(run('block_by_burn_height', { burn_block_height: '0125' })).canonicalPath).toBe('/extended/v1/block/by_burn_block_height/125');
  });
});

describe('boolean parameters: only the literals true and false', () => {
  const stx = (query: string) => run('address_stx_balance', { principal: ADDRESS }, query);

  it('keeps unanchored=true and drops the default unanchored=false', () => {
    const yes = requestOf(stx('unanchored=true'));
    expect(yes.upstreamPath).toBe(`/extended/v1/address/${ADDRESS}/stx?unanchored=true`);
    expect(yes.facts.unanchored).toBe(true);
    const no = requestOf(stx('unanchored=false'));
    expect(no.upstreamPath).toBe(`/extended/v1/address/${ADDRESS}/stx`);
    expect(no.facts.unanchored).toBe(false);
  });

  it.each(['unanchored=1', 'unanchored=0', 'unanchored=TRUE', 'unanchored=True', 'unanchored', 'unanchored=', 'unanchored=true&unanchored=true'])(
    'rejects %s',
    (query) => {
      expect(stx(query)).toEqual(schemaError('querystring/unanchored must be boolean'));
    },
  );

  it('checks exclude_function_args the same way', () => {
    expect(run('address_transactions', { principal: ADDRESS }, 'exclude_function_args=yes')).toEqual(
      schemaError('querystring/exclude_function_args must be boolean'),
    );
    expect(pathOf(run('address_transactions', { principal: ADDRESS }, 'exclude_function_args=true'))).toBe(`${TXS_V1}?exclude_function_args=true`);
  });
});

describe('transaction ids (/extended/v1/tx/:tx_id)', () => {
  const tx = (id: string, query = '') => run('tx_by_id', { tx_id: id }, query);

  it('accepts a 0x id and lower-cases it', () => {
    expect(pathOf(tx(`0x${TX}`))).toBe(`/extended/v1/tx/0x${TX}`);
    expect(pathOf(tx(`0x${TX.toUpperCase()}`))).toBe(`/extended/v1/tx/0x${TX}`);
  });

  it('redirects an id without 0x, repeating the query as sent', () => {
    expect(tx(TX)).toEqual({ kind: 'redirect', location: `/extended/v1/tx/0x${TX}` });
    expect(tx(TX, 'event_limit=5&foo=bar')).toEqual({ kind: 'redirect', location: `/extended/v1/tx/0x${TX}?event_limit=5&foo=bar` });
  });

  it.each([
    ['upper-case 0X prefix', `0X${TX}`],
    ['short', '0x1234'],
    ['non-hex', '0xnothex'],
    ['63 digits', `0x${TX.slice(1)}`],
    ['65 digits', `0x${TX}a`],
    ['non-hex digit at the end', `0x${TX.slice(0, 63)}g`],
    ['empty', ''],
  ])('rejects a %s id with the pattern message', (_name, id) => {
    expect(tx(id)).toEqual(schemaError(`params/tx_id must match pattern "${TX_PATTERN}"`));
  });
});

describe('principals', () => {
  const stx = (p: string) => run('address_stx_balance', { principal: p });

  it.each([
    ['a standard address', ADDRESS],
    ['another standard address', OTHER_ADDRESS],
    ['a contract id', CONTRACT],
    ['a contract id with - and _', `${ADDRESS}.my_contract-v2`],
  ])('accepts %s', (_name, p) => {
    expect(pathOf(stx(p))).toBe(`/extended/v1/address/${p}/stx`);
  });

  it.each([
    ['not c32 at all', 'NOT_A_PRINCIPAL'],
    ['lower case', ADDRESS.toLowerCase()],
    ['too short', 'SPxyz'],
    ['27 characters', ADDRESS.slice(0, 27)],
    ['empty', ''],
  ])('rejects %s with the anyOf pattern message', (_name, p) => {
    expect(stx(p)).toEqual(schemaError(principalPatternMessage('params/principal')));
  });

  it('names the parameter address on the v2 route', () => {
    expect(run('address_transactions_v2', { address: 'SPxyz' })).toEqual(schemaError(principalPatternMessage('params/address')));
  });

  it.each([
    ['a c32 checksum failure', BAD_CHECKSUM],
    ['a contract on a bad address', `${BAD_CHECKSUM}.pox-4`],
    ['a contract name with a bad character', `${ADDRESS}.pox!4`],
    ['a contract name starting with a digit', `${ADDRESS}.4pox`],
    ['an empty contract name', `${ADDRESS}.`],
    ['trailing garbage after an address', `${ADDRESS}xyz`],
  ])('rejects %s with the handler message', (_name, p) => {
    const outcome = stx(p);
    expect(outcome).toEqual(handlerError(`invalid STX address "${p}"`));
    if (outcome.kind === 'error') {
      expect(outcome.error.body).toBe(`{"statusCode":400,"error":"Bad Request","message":"invalid STX address \\"${p}\\""}`);
    }
  });

  it('checks the handler rule on balances, transactions, with_transfers and tx/events too', () => {
    const message = handlerError(`invalid STX address "${BAD_CHECKSUM}"`);
    expect(run('address_balances', { principal: BAD_CHECKSUM })).toEqual(message);
    expect(run('address_transactions', { principal: BAD_CHECKSUM })).toEqual(message);
    expect(run('tx_with_transfers', { principal: BAD_CHECKSUM, tx_id: `0x${TX}` })).toEqual(message);
    expect(run('tx_events', {}, `address=${BAD_CHECKSUM}`)).toEqual(message);
  });

  it('does not reject a bad checksum on the v2 address route (the upstream does not check it): it goes uncached', () => {
    expect(run('address_transactions_v2', { address: BAD_CHECKSUM })).toEqual({ kind: 'passthrough' });
  });
});

describe('the address of /extended/v2/addresses/:address/transactions (route 11)', () => {
  const v2 = (address: string) => run('address_transactions_v2', { address });

  it('caches a real principal, an address or a contract', () => {
    expect(pathOf(v2(ADDRESS))).toBe(`/extended/v2/addresses/${ADDRESS}/transactions`);
    expect(pathOf(v2(OTHER_ADDRESS))).toBe(`/extended/v2/addresses/${OTHER_ADDRESS}/transactions`);
    expect(pathOf(v2(CONTRACT))).toBe(`/extended/v2/addresses/${CONTRACT}/transactions`);
  });

  it('leaves to the passthrough what the unanchored pattern lets after 28 c32 characters', () => {
    for (const address of [
      `${OTHER_ADDRESS}/../../x`,
      `${ADDRESS}/../../../v1/tx/mempool`,
      `${OTHER_ADDRESS}x`,
      `${CONTRACT}.more`,
      `${CONTRACT}/x`,
      `${ADDRESS.slice(0, 28)}`,
      `${OTHER_ADDRESS}${'0'.repeat(59)}`,
    ]) {
      expect(v2(address), address).toEqual({ kind: 'passthrough' });
    }
  });

  it('still answers what fails the schema with the schema error', () => {
    expect(v2(`x${OTHER_ADDRESS}`)).toEqual(schemaError(principalPatternMessage('params/address')));
  });
});

describe('height_or_hash (/extended/v2/blocks/:height_or_hash)', () => {
  const block = (value: string) => run('block', { height_or_hash: value });
  const HASH = '5705546ec6741f77957bb3e73bf795dcf120c0a869c1d408396e7e30a3b2f94f';

  it('accepts latest and marks the request as such', () => {
    const request = requestOf(block('latest'));
    expect(request.upstreamPath).toBe('/extended/v2/blocks/latest');
    expect(request.facts.latest).toBe(true);
  });

  it.each([
    ['a height', '5', '/extended/v2/blocks/5'],
    ['height 0', '0', '/extended/v2/blocks/0'],
    ['a hash with 0x', `0x${HASH}`, `/extended/v2/blocks/0x${HASH}`],
    ['a hash without 0x', HASH, `/extended/v2/blocks/0x${HASH}`],
    ['an upper-case hash', `0x${HASH.toUpperCase()}`, `/extended/v2/blocks/0x${HASH}`],
    ['an all-digit hash (not a height)', '1'.repeat(64), `/extended/v2/blocks/0x${'1'.repeat(64)}`],
  ])('accepts %s', (_name, value, upstreamPath) => {
    expect(pathOf(block(value))).toBe(upstreamPath);
  });

  it.each(['abc', '0xnothex', 'LATEST', '1.5', ''])('rejects %j with the anyOf message', (value) => {
    expect(block(value)).toEqual(
      schemaError(
        `params/height_or_hash must be equal to constant, params/height_or_hash must match pattern "${TX_PATTERN}", ` +
          'params/height_or_hash must be integer, params/height_or_hash must match a schema in anyOf',
      ),
    );
  });

  it.each(['-5', '-1'])('answers %s with the upstream 500 body', (value) => {
    expect(block(value)).toEqual({
      kind: 'error',
      error: { status: 500, body: '{"statusCode":500,"error":"Internal Server Error","message":"Invalid block height or hash"}' },
    });
  });
});

describe('tx/multiple', () => {
  const multiple = (query: string) => run('tx_multiple', {}, query);

  it('gives the repeated and the comma form the same canonical request', () => {
    const repeated = requestOf(multiple(`tx_id=0x${TX}&tx_id=0x${TX2}`));
    const comma = requestOf(multiple(`tx_id=0x${TX},0x${TX2}`));
    const encodedComma = requestOf(multiple(`tx_id=0x${TX}%2C0x${TX2}`));
    expect(repeated.upstreamPath).toBe(`/extended/v1/tx/multiple?tx_id=0x${TX},0x${TX2}`);
    expect(comma.upstreamPath).toBe(repeated.upstreamPath);
    expect(encodedComma.upstreamPath).toBe(repeated.upstreamPath);
    expect(comma.values.tx_id).toEqual([`0x${TX}`, `0x${TX2}`]);
    expect(repeated.values.tx_id).toEqual([`0x${TX}`, `0x${TX2}`]);
  });

  it('does not split when the key is repeated: mixing both forms fails the pattern', () => {
    expect(multiple(`tx_id=0x${TX},0x${TX2}&tx_id=0x${TX}`)).toEqual(schemaError(`querystring/tx_id/0 must match pattern "${TX_PATTERN}"`));
  });

  it('reports the index of the first bad item', () => {
    expect(multiple(`tx_id=0x${TX},abc`)).toEqual(schemaError(`querystring/tx_id/1 must match pattern "${TX_PATTERN}"`));
    expect(multiple('tx_id=abc')).toEqual(schemaError(`querystring/tx_id/0 must match pattern "${TX_PATTERN}"`));
  });

  it.each(['', 'event_limit=5', `tx_id[]=0x${TX}`, `TX_ID=0x${TX}`])('requires tx_id (query %j)', (query) => {
    expect(multiple(query)).toEqual(schemaError("querystring must have required property 'tx_id'"));
  });

  it('requires the lower-case 0x prefix on every id (handler check)', () => {
    const missing = handlerError('Hex string is missing the "0x" prefix');
    expect(multiple(`tx_id=${TX}&tx_id=0x${TX2}`)).toEqual(missing);
    expect(multiple(`tx_id=0x${TX2},${TX}`)).toEqual(missing);
    expect(multiple(`tx_id=0X${TX}`)).toEqual(schemaError(`querystring/tx_id/0 must match pattern "${TX_PATTERN}"`));
  });

  it('checks the other query parameters', () => {
    expect(multiple(`tx_id=0x${TX}&event_limit=101`)).toEqual(schemaError('querystring/event_limit must be <= 100'));
    expect(multiple(`tx_id=0x${TX}&unanchored=1`)).toEqual(schemaError('querystring/unanchored must be boolean'));
  });
});

describe('tx/events', () => {
  const events = (query: string) => run('tx_events', {}, query);
  const BASE = `/extended/v1/tx/events?address=${ADDRESS}`;

  it('gives repeated, comma, reordered and duplicated type lists one canonical path', () => {
    const forms = [
      'type=stx_lock&type=smart_contract_log',
      'type=smart_contract_log,stx_lock',
      'type=stx_lock,smart_contract_log',
      'type=stx_lock,smart_contract_log,stx_lock',
      'type=smart_contract_log&type=stx_lock&type=smart_contract_log',
    ];
    for (const form of forms) {
      expect(pathOf(events(`address=${ADDRESS}&${form}`)), form).toBe(`${BASE}&type=smart_contract_log,stx_lock`);
    }
  });

  it('ignores the bracket form type[]= (the upstream does not understand it)', () => {
    expect(pathOf(events(`address=${ADDRESS}&type[]=stx_lock`))).toBe(BASE);
    expect(pathOf(events(`address=${ADDRESS}&type%5B%5D=bogus`))).toBe(BASE);
  });

  it('rejects an unknown type with the anyOf message', () => {
    const item = (i: number) => `querystring/type/${i} must be equal to constant`;
    const anyOf = (i: number) => `${Array(5).fill(item(i)).join(', ')}, querystring/type/${i} must match a schema in anyOf`;
    expect(events(`address=${ADDRESS}&type=bogus`)).toEqual(schemaError(anyOf(0)));
    expect(events(`address=${ADDRESS}&type=stx_lock,bogus`)).toEqual(schemaError(anyOf(1)));
  });

  it('needs exactly one of address and tx_id', () => {
    expect(events('')).toEqual(handlerError("can not find 'address' or 'tx_id' in the request"));
    expect(events('limit=5')).toEqual(handlerError("can not find 'address' or 'tx_id' in the request"));
    expect(events(`tx_id=0x${TX}&address=${ADDRESS}`)).toEqual(handlerError("can't handle both 'address' and 'tx_id' in the same request"));
  });

  it('adds 0x to a tx_id and lower-cases it, and records whose events these are', () => {
    const plain = requestOf(events(`tx_id=${TX.toUpperCase()}`));
    expect(plain.upstreamPath).toBe(`/extended/v1/tx/events?tx_id=0x${TX}`);
    expect(plain.facts.eventsOfTx).toBe(`0x${TX}`);
    expect(pathOf(events(`tx_id=0x${TX}`))).toBe(plain.upstreamPath);
  });

  it('validates tx_id and address with their patterns', () => {
    expect(events('tx_id=0xnothex')).toEqual(schemaError(`querystring/tx_id must match pattern "${TX_PATTERN}"`));
    expect(events('address=NOT_A_PRINCIPAL')).toEqual(schemaError(principalPatternMessage('querystring/address')));
  });
});

describe('until_block', () => {
  const stx = (query: string) => run('address_stx_balance', { principal: ADDRESS }, query);
  const STX = `/extended/v1/address/${ADDRESS}/stx`;

  it.each(['until_block=abc', 'until_block=0', 'until_block=-3'])('rejects %s', (query) => {
    expect(stx(query)).toEqual(handlerError('Unexpected integer value for block height path parameter'));
  });

  it('reads a leading integer like parseInt does', () => {
    const request = requestOf(stx('until_block=123abc'));
    // Forwarded as sent (the upstream's parseInt reads 123 too), keyed as 123.
    expect(request.upstreamPath).toBe(`${STX}?until_block=123abc`);
    expect(request.canonicalPath).toBe(`${STX}?until_block=123`);
    expect(request.facts.untilBlock).toEqual({ kind: 'height', height: 123 });
  });

  it('keeps an empty until_block (it drops the pending fields upstream)', () => {
    const request = requestOf(stx('until_block='));
    expect(request.upstreamPath).toBe(`${STX}?until_block=`);
    expect(request.facts.untilBlock).toEqual({ kind: 'empty' });
    expect(requestOf(stx('')).facts.untilBlock).toEqual({ kind: 'absent' });
  });

  it('passes a block hash on as given', () => {
    const request = requestOf(stx('until_block=0xabc'));
    expect(request.upstreamPath).toBe(`${STX}?until_block=0xabc`);
    expect(request.facts.untilBlock).toEqual({ kind: 'hash', hash: '0xabc' });
  });

  it('refuses unanchored=true together with until_block', () => {
    const message = handlerError("can't handle both 'unanchored=true' and 'until_block' in the same request");
    expect(stx('unanchored=true&until_block=5')).toEqual(message);
    expect(run('address_balances', { principal: ADDRESS }, 'until_block=5&unanchored=true')).toEqual(message);
    expect(addressTxs('unanchored=true&until_block=5')).toEqual(message);
    expect(pathOf(stx('unanchored=false&until_block=5'))).toBe(`${STX}?until_block=5`);
  });

  it('checks the principal before until_block (upstream handler order)', () => {
    expect(run('address_stx_balance', { principal: BAD_CHECKSUM }, 'until_block=abc')).toEqual(handlerError(`invalid STX address "${BAD_CHECKSUM}"`));
  });
});

describe('address transactions: height with until_block', () => {
  it('refuses height together with until_block', () => {
    expect(addressTxs('height=5&until_block=5')).toEqual(handlerError("can't handle until_block and block_height in the same request"));
    expect(addressTxs('height=5&until_block=0xabc')).toEqual(handlerError("can't handle until_block and block_height in the same request"));
  });

  it('ignores height=0, so it may go with until_block', () => {
    const request = requestOf(addressTxs('height=0&until_block=5'));
    expect(request.upstreamPath).toContain('until_block=5');
    expect(request.facts.atHeight).toBeUndefined();
    expect(request.facts.untilBlock).toEqual({ kind: 'height', height: 5 });
  });

  it('records a non-zero height as a single-block request', () => {
    expect(requestOf(addressTxs('height=7')).facts.atHeight).toBe(7);
  });
});

describe('limit=0', () => {
  it.each([
    ['address_transactions', { principal: ADDRESS }, TXS_V1],
    ['contract_events', { contract_id: CONTRACT }, `/extended/v1/contract/${CONTRACT}/events`],
  ] as const)('means the default on the v1 route %s (dropped from the canonical path)', (id, params, path) => {
    expect(pathOf(run(id, params, 'limit=0'))).toBe(path);
    expect(pathOf(run(id, params, 'limit=20'))).toBe(path);
    expect(pathOf(run(id, params, ''))).toBe(path);
  });

  it('means default on tx/events and event_limit too', () => {
    expect(pathOf(run('tx_events', {}, `address=${ADDRESS}&limit=0`))).toBe(`/extended/v1/tx/events?address=${ADDRESS}`);
    expect(pathOf(run('tx_by_id', { tx_id: `0x${TX}` }, 'event_limit=0'))).toBe(`/extended/v1/tx/0x${TX}`);
  });

  it('is kept on /extended/v2/addresses/:address/transactions, where it really means zero rows', () => {
    const v2 = (q: string) => pathOf(run('address_transactions_v2', { address: ADDRESS }, q));
    expect(v2('limit=0')).toBe(`/extended/v2/addresses/${ADDRESS}/transactions?limit=0`);
    expect(v2('limit=20')).toBe(`/extended/v2/addresses/${ADDRESS}/transactions`);
  });

  it('passes the undeclared cursor through on the v2 route', () => {
    expect(pathOf(run('address_transactions_v2', { address: ADDRESS }, 'cursor=0xab:0:1'))).toBe(
      `/extended/v2/addresses/${ADDRESS}/transactions?cursor=0xab%3A0%3A1`,
    );
  });
});

describe('query strings at the edges', () => {
  const ADDR = 'ST000000000000000000002AMW42H';

  it('reads parameters past the 1,000th key like the upstream (no key limit)', () => {
    const junk = Array.from({ length: 1_200 }, (_, i) => `junk${i}=1`).join('&');
    const outcome = run('address_transactions', { principal: ADDR }, `${junk}&limit=999`);
    expect(outcome).toMatchObject({ kind: 'error', error: { status: 400 } });
    expect(outcome.kind === 'error' && JSON.parse(outcome.error.body).message).toBe('querystring/limit must be <= 50');
  });

  it('refuses a repeated cursor rather than forwarding only one of them', () => {
    const outcome = run('address_transactions_v2', { address: ADDR }, 'cursor=a&cursor=b');
    expect(outcome.kind === 'error' && JSON.parse(outcome.error.body).message).toBe('querystring/cursor must be string');
    expect(requestOf(run('address_transactions_v2', { address: ADDR }, 'cursor=0xab%3A1%3A2')).upstreamPath).toBe(
      `/extended/v2/addresses/${ADDR}/transactions?cursor=0xab%3A1%3A2`,
    );
  });
});
