/**
 * Input the upstream would accept at any length is bounded before it becomes a cache key, costs
 * linear time to refuse, and numbers reach the upstream as digits: path parameters stop at
 * Fastify's maxParamLength, principals are refused on length before any c32 decoding, free-text
 * values and tx/multiple lists have a documented bound, integers are never forwarded as `1e+21`.
 */
import { describe, expect, it } from 'vitest';
import { isValidC32Address, isValidPrincipal, MAX_ADDRESS_LENGTH } from '../../src/routes/handler-checks.js';
import { integerText, MAX_FREE_TEXT_LENGTH } from '../../src/routes/param-kinds.js';
import { createRouteMatcher, MAX_PARAM_LENGTH } from '../../src/routes/route-matcher.js';
import { MAX_TX_IDS, ROUTES } from '../../src/routes/route-table.js';
import type { RouteId } from '../../src/routes/route-spec.js';
import type { ValidationOutcome } from '../../src/routes/validate.js';
import { requestOf, validateRoute } from '../support/validate-route.js';

const ADDRESS = 'ST000000000000000000002AMW42H';
const TX = `0x${'ab'.repeat(32)}`;
const KB = 1024;
const C32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `n` characters of the c32 alphabet: passes the upstream's (unanchored) address pattern. */
const c32Run = (n: number): string => Array.from({ length: n }, (_, i) => C32[(i * 7) % 32]).join('');

const run = validateRoute;

const pathOf = (outcome: ValidationOutcome): string => requestOf(outcome).upstreamPath;

const schemaError = (message: string): ValidationOutcome => ({
  kind: 'error',
  error: { status: 400, body: JSON.stringify({ statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message }) },
});
const handlerError = (message: string): ValidationOutcome => ({
  kind: 'error',
  error: { status: 400, body: JSON.stringify({ statusCode: 400, error: 'Bad Request', message }) },
});

describe('path parameters: Fastify maxParamLength (100 decoded characters)', () => {
  const match = createRouteMatcher(ROUTES);

  it('matches a parameter of 100 characters and no route for 101, as the upstream router (its 404)', () => {
    expect(MAX_PARAM_LENGTH).toBe(100);
    expect(match(`/extended/v1/contract/${'a'.repeat(100)}/events`)).toMatchObject({ kind: 'match', params: { contract_id: 'a'.repeat(100) } });
    expect(match(`/extended/v1/contract/${'a'.repeat(101)}/events`)).toEqual({ kind: 'none' });
  });

  it('counts decoded characters: 101 escapes are too long, 300 escaped bytes of 100 characters are not', () => {
    expect(match(`/extended/v1/contract/${'%41'.repeat(101)}/events`)).toEqual({ kind: 'none' });
    expect(match(`/extended/v1/contract/${'%41'.repeat(100)}/events`)).toMatchObject({ kind: 'match' });
  });

  it.each([
    ['a 16 KB principal', `/extended/v1/address/${c32Run(16 * KB)}/stx`],
    ['a 16 KB contract id', `/extended/v1/contract/${ADDRESS}.${'a'.repeat(16 * KB)}/events`],
    ['a 16 KB tx id', `/extended/v1/tx/0x${'a'.repeat(16 * KB)}`],
    ['a 16 KB block height', `/extended/v2/blocks/${'1'.repeat(16 * KB)}`],
    ['a 16 KB burn block height', `/extended/v1/block/by_burn_block_height/${'0'.repeat(16 * KB)}1`],
    ['a 16 KB tx id after a valid principal', `/extended/v1/address/${ADDRESS}/${'a'.repeat(16 * KB)}/with_transfers`],
  ])('finds no route for %s (never a key, never decoded)', (_name, path) => {
    expect(match(path)).toEqual({ kind: 'none' });
  });

  it('answers a bad escape in an earlier parameter with the bad-URL 400, as find-my-way does', () => {
    expect(match(`/extended/v1/address/%E0%A4%A/${'a'.repeat(200)}/with_transfers`)).toEqual({ kind: 'bad-url' });
  });
});

describe('principals longer than any valid one are refused before decoding', () => {
  /** The real decoder, counting what reaches it. */
  function countingDecoder() {
    const inputs: string[] = [];
    return {
      inputs,
      decode: (address: string): boolean => {
        inputs.push(address);
        return isValidC32Address(address);
      },
    };
  }

  it('decodes a valid address and contract id, as before', () => {
    const counter = countingDecoder();
    expect(isValidPrincipal(ADDRESS, counter.decode)).toBe(true);
    expect(isValidPrincipal(`${ADDRESS}.pox-4`, counter.decode)).toBe(true);
    expect(counter.inputs).toEqual([ADDRESS, ADDRESS]);
  });

  it.each([1, 4, 16, 64])('never hands the decoder more than 41 characters, for %i KB inputs of every shape', (size) => {
    const counter = countingDecoder();
    const n = size * KB;
    const shapes = [
      c32Run(n), // one long "address"
      `${c32Run(n)}.name`, // a long address part
      `${ADDRESS}.${'a'.repeat(n)}`, // a long contract name
      `${ADDRESS}.name.${'x'.repeat(n)}`, // a valid prefix, then junk after a second dot
      `${ADDRESS}${'.'.repeat(n)}`, // dots: no split into thousands of parts
    ];
    for (const p of shapes) expect(isValidPrincipal(p, counter.decode)).toBe(false);
    expect(counter.inputs).toEqual([]);
  });

  it('decodes an address part of exactly 41 characters, and refuses 42 without decoding', () => {
    const counter = countingDecoder();
    isValidPrincipal(c32Run(MAX_ADDRESS_LENGTH), counter.decode);
    isValidPrincipal(`${c32Run(MAX_ADDRESS_LENGTH)}.a`, counter.decode);
    isValidPrincipal(c32Run(MAX_ADDRESS_LENGTH + 1), counter.decode);
    isValidPrincipal(`${c32Run(MAX_ADDRESS_LENGTH + 1)}.a`, counter.decode);
    expect(counter.inputs).toEqual([c32Run(41), c32Run(41)]);
  });

  it('answers a 16 KB principal in a query (tx/events address) with the handler message', () => {
    const p = c32Run(16 * KB);
    expect(run('tx_events', {}, `address=${p}`)).toEqual(handlerError(`invalid STX address "${p}"`));
    const contract = `${ADDRESS}.name.${'x'.repeat(16 * KB)}`;
    expect(run('tx_events', {}, `address=${contract}`)).toEqual(handlerError(`invalid STX address "${contract}"`));
  });

  it('still accepts the longest valid contract id (41 + 1 + 128 characters) where the handler would', () => {
    // The name part of a longer principal is what the upstream's split('.') checks: 128 characters at most.
    expect(run('tx_events', {}, `address=${ADDRESS}.${'a'.repeat(128)}`)).toMatchObject({ kind: 'request' });
    expect(run('tx_events', {}, `address=${ADDRESS}.${'a'.repeat(129)}`)).toEqual(handlerError(`invalid STX address "${ADDRESS}.${'a'.repeat(129)}"`));
  });
});

describe('free text and lists: a documented bound where the upstream has none', () => {
  const stx = (query: string) => run('address_stx_balance', { principal: ADDRESS }, query);

  it('refuses an until_block over 256 characters with the message a maxLength would give', () => {
    expect(MAX_FREE_TEXT_LENGTH).toBe(256);
    const message = schemaError('querystring/until_block must NOT have more than 256 characters');
    expect(stx(`until_block=${'1'.repeat(15 * KB)}`)).toEqual(message);
    expect(stx(`until_block=0x${'a'.repeat(255)}`)).toEqual(message);
    expect(run('address_transactions', { principal: ADDRESS }, `until_block=${'9'.repeat(257)}`)).toEqual(message);
    expect(pathOf(stx(`until_block=0x${'a'.repeat(254)}`))).toContain(`until_block=0x${'a'.repeat(254)}`);
  });

  it('counts characters, not UTF-16 units, as Ajv does', () => {
    expect(pathOf(stx(`until_block=0x${encodeURIComponent('😀'.repeat(254))}`))).toContain('until_block=0x');
    expect(stx(`until_block=0x${encodeURIComponent('😀'.repeat(255))}`)).toEqual(schemaError('querystring/until_block must NOT have more than 256 characters'));
  });

  it('refuses a cursor over 256 characters', () => {
    const v2 = (query: string) => run('address_transactions_v2', { address: ADDRESS }, query);
    expect(v2(`cursor=${'a'.repeat(257)}`)).toEqual(schemaError('querystring/cursor must NOT have more than 256 characters'));
    expect(pathOf(v2(`cursor=${'a'.repeat(256)}`))).toContain(`cursor=${'a'.repeat(256)}`);
  });

  it('refuses more than 250 tx ids (comma list or repeated key) before checking any of them', () => {
    expect(MAX_TX_IDS).toBe(250);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `0x${i.toString(16).padStart(64, '0')}`);
    const message = schemaError('querystring/tx_id must NOT have more than 250 items');
    expect(run('tx_multiple', {}, `tx_id=${ids(251).join(',')}`)).toEqual(message);
    expect(
      run(
        'tx_multiple',
        {},
        ids(251)
          .map((id) => `tx_id=${id}`)
          .join('&'),
      ),
    ).toEqual(message);
    expect(run('tx_multiple', {}, `tx_id=${Array(5_000).fill('nothex').join(',')}`)).toEqual(message);
    expect(run('tx_multiple', {}, `tx_id=${ids(250).join(',')}`)).toMatchObject({ kind: 'request' });
  });
});

describe('numbers are forwarded as digits', () => {
  const BIG = '1000000000000000000000'; // 1e21: String() would give "1e+21"
  const TXS = `/extended/v1/address/${ADDRESS}/transactions`;

  it('integerText gives the shortest digits of a safe integer and the exact digits of any larger one', () => {
    expect(integerText(5)).toBe('5');
    expect(integerText(-0)).toBe('0');
    expect(integerText(1e21)).toBe(BIG);
    expect(integerText(2 ** 53 + 2)).toBe('9007199254740994');
    expect(Number(integerText(1.5e300))).toBe(1.5e300);
    expect(integerText(1.5e300)).toMatch(/^15\d{299}$/);
  });

  it('forwards until_block as sent and keys it by the height parseInt reads, in digits (1e21 stays 1e21, not block 1)', () => {
    const stx = (query: string) => requestOf(run('address_stx_balance', { principal: ADDRESS }, query));
    const STX = `/extended/v1/address/${ADDRESS}/stx`;
    expect(stx(`until_block=${BIG}`).upstreamPath).toBe(`${STX}?until_block=${BIG}`);
    expect(stx(`until_block=${BIG}`).canonicalPath).toBe(`${STX}?until_block=${BIG}`);
    expect(stx('until_block=0007').upstreamPath).toBe(`${STX}?until_block=0007`);
    expect(stx('until_block=0007').canonicalPath).toBe(`${STX}?until_block=7`);
    // parseInt stops at the "e": the upstream reads 1, so does the proxy.
    expect(stx('until_block=1e21').upstreamPath).toBe(`${STX}?until_block=1e21`);
    expect(stx('until_block=1e21').canonicalPath).toBe(`${STX}?until_block=1`);
  });

  it('forwards the digits of a 61-character until_block as sent, keyed with every spelling of the same number', () => {
    const STX = `/extended/v1/address/${ADDRESS}/stx`;
    const sent = `1${'0'.repeat(60)}`;
    // The exact digits of the double parseInt reads for `sent`: once forwarded instead of the client's.
    const double = '999999999999999949387135297074018866963645011013410073083904';
    const request = requestOf(run('address_stx_balance', { principal: ADDRESS }, `until_block=${sent}`));
    expect(request.upstreamPath).toBe(`${STX}?until_block=${sent}`);
    expect(request.canonicalPath).toBe(`${STX}?until_block=${double}`);
    expect(requestOf(run('address_stx_balance', { principal: ADDRESS }, `until_block=${double}`)).canonicalPath).toBe(request.canonicalPath);
    // A number the upstream reads differently keys apart.
    expect(requestOf(run('address_stx_balance', { principal: ADDRESS }, `until_block=1${'0'.repeat(59)}`)).canonicalPath).not.toBe(request.canonicalPath);
  });

  it('forwards offset, height and event_offset past 2^53 as digits', () => {
    expect(pathOf(run('address_transactions', { principal: ADDRESS }, `offset=${BIG}`))).toBe(`${TXS}?offset=${BIG}`);
    expect(pathOf(run('address_transactions', { principal: ADDRESS }, `height=${BIG}`))).toBe(`${TXS}?height=${BIG}`);
    // Ajv reads 1e21 as the same number as its digits: not digits, so the digits of that number go.
    expect(pathOf(run('address_transactions', { principal: ADDRESS }, 'offset=1e21'))).toBe(`${TXS}?offset=${BIG}`);
    expect(pathOf(run('tx_by_id', { tx_id: TX }, `event_offset=${BIG}`))).toBe(`/extended/v1/tx/${TX}?event_offset=${BIG}`);
    expect(pathOf(run('tx_events', {}, `tx_id=${TX}&offset=${BIG}`))).toBe(`/extended/v1/tx/events?offset=${BIG}&tx_id=${TX}`);
    expect(pathOf(run('contract_events', { contract_id: `${ADDRESS}.c` }, `offset=${BIG}`))).toBe(`/extended/v1/contract/${ADDRESS}.c/events?offset=${BIG}`);
  });

  it('forwards block and burn block heights in paths as digits, up to the router parameter length', () => {
    expect(pathOf(run('block', { height_or_hash: BIG }))).toBe(`/extended/v2/blocks/${BIG}`);
    expect(pathOf(run('block_by_burn_height', { burn_block_height: BIG }))).toBe(`/extended/v1/block/by_burn_block_height/${BIG}`);
    // 1e100's digits are 101 characters, more than the upstream router takes in a parameter.
    expect(pathOf(run('block', { height_or_hash: '1e100' }))).toBe('/extended/v2/blocks/1e+100');
  });

  it("forwards every integer parameter of the 13 routes with the client's digits, keyed by one form per number", () => {
    const sent = `00${'9'.repeat(40)}`; // leading zeros, and past 2^53: the double's digits differ
    const canonical = integerText(Number(sent));
    expect(canonical).not.toBe(sent.slice(2));
    const cases: [RouteId, Record<string, string>, string, string][] = [
      ['address_transactions', { principal: ADDRESS }, 'offset', TXS],
      ['address_transactions', { principal: ADDRESS }, 'height', TXS],
      ['address_transactions_v2', { address: ADDRESS }, 'offset', `/extended/v2/addresses/${ADDRESS}/transactions`],
      ['tx_by_id', { tx_id: TX }, 'event_offset', `/extended/v1/tx/${TX}`],
      ['tx_multiple', {}, 'event_offset', '/extended/v1/tx/multiple'],
      ['tx_events', {}, 'offset', '/extended/v1/tx/events'],
      ['contract_events', { contract_id: `${ADDRESS}.c` }, 'offset', `/extended/v1/contract/${ADDRESS}.c/events`],
    ];
    for (const [id, params, name, path] of cases) {
      const extra = id === 'tx_multiple' || id === 'tx_events' ? `&tx_id=${TX}` : '';
      const request = requestOf(run(id, params, `${name}=${sent}${extra}`));
      expect(request.upstreamPath, `${id} ${name}`).toContain(`${name}=${sent}`);
      expect(request.canonicalPath, `${id} ${name}`).toContain(`${name}=${canonical}`);
      expect(request.upstreamPath.startsWith(`${path}?`), id).toBe(true);
    }
    // Bounded ones: the client's digits go, the number keys.
    for (const [id, params, name] of [
      ['address_transactions', { principal: ADDRESS }, 'limit'],
      ['tx_by_id', { tx_id: TX }, 'event_limit'],
    ] as const) {
      const request = requestOf(run(id, params, `${name}=007`));
      expect(request.upstreamPath).toContain(`${name}=007`);
      expect(request.canonicalPath).toContain(`${name}=7`);
    }
    for (const [id, name] of [
      ['block', 'height_or_hash'],
      ['block_by_burn_height', 'burn_block_height'],
    ] as const) {
      const request = requestOf(run(id, { [name]: sent }));
      expect(request.upstreamPath.endsWith(`/${sent}`), id).toBe(true);
      expect(request.canonicalPath.endsWith(`/${canonical}`), id).toBe(true);
    }
  });
});
