/**
 * Which URLs share one upstream ETag (etag-scope.ts), and what the proxy remembers of the
 * newest ETag per scope (resource-validations.ts): answers landing out of order never make an
 * older ETag look current.
 */
import { describe, expect, it } from 'vitest';
import { etagScope } from '../../src/cache/etag-scope.js';
import { ResourceValidations } from '../../src/cache/resource-validations.js';
import type { Snapshot } from '../../src/cache/admit.js';
import { ROUTE_BY_ID } from '../../src/routes/route-table.js';
import type { RouteId } from '../../src/routes/route-spec.js';
import { requestOf, validateRoute } from '../support/validate-route.js';

const P = 'ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84';
const OTHER = 'ST000000000000000000002AMW42H';
const TX = '0xcba511741b230bd85cb5b3b10d26e0b92695d4a83f95c260cad82a40cd764235';

const scopeOf = (id: RouteId, params: Record<string, string>, query = '') => etagScope(ROUTE_BY_ID.get(id)!, requestOf(validateRoute(id, params, query)));

const at = (ms: number, tipHash = '0xtip'): Snapshot => ({ at: ms, chain: { tipHash, reorgs: [] } });

describe('etagScope', () => {
  it('puts every page of a principal history, v1 and v2, in one principal scope', () => {
    const scope = scopeOf('address_transactions', { principal: P });
    expect(scope).toBe(`principal:${P}`);
    expect(scopeOf('address_transactions', { principal: P }, 'limit=5&offset=5&until_block=3')).toBe(scope);
    expect(scopeOf('address_transactions_v2', { address: P }, 'limit=7')).toBe(scope);
    expect(scopeOf('address_transactions', { principal: OTHER })).not.toBe(scope);
  });

  it('puts /stx and /balances in one principal_mempool scope, apart from the history', () => {
    const scope = scopeOf('address_stx_balance', { principal: P });
    expect(scope).toBe(`principal_mempool:${P}`);
    expect(scopeOf('address_balances', { principal: P }, 'until_block=4')).toBe(scope);
  });

  it('shares nothing where the ETag is the tip, the mempool or the transaction', () => {
    expect(scopeOf('contract_events', { contract_id: `${OTHER}.pox-4` })).toBeUndefined();
    expect(scopeOf('tx_events', {}, `address=${P}`)).toBeUndefined();
    expect(scopeOf('mempool_fees', {})).toBeUndefined();
    expect(scopeOf('tx_by_id', { tx_id: TX })).toBeUndefined();
  });
});

describe('ResourceValidations', () => {
  it('knows the newest ETag of a scope and when it was asked for', () => {
    const known = new ResourceValidations();
    known.record('s', '"a"', at(10));
    expect(known.confirmedAt('s', '"a"')?.at).toBe(10);
    expect(known.confirmedAt('s', '"b"')).toBeUndefined();
    expect(known.confirmedAt('t', '"a"')).toBeUndefined();
    known.record('s', '"b"', at(20, '0xnext'));
    expect(known.confirmedAt('s', '"a"')).toBeUndefined();
    expect(known.confirmedAt('s', '"b"')?.chain.tipHash).toBe('0xnext');
  });

  it('never lets an older answer that lands late replace a newer one', () => {
    const known = new ResourceValidations();
    known.record('s', '"new"', at(20));
    known.record('s', '"old"', at(10));
    expect(known.confirmedAt('s', '"old"')).toBeUndefined();
    expect(known.confirmedAt('s', '"new"')?.at).toBe(20);
  });

  it('forgets a scope when two answers asked in the same millisecond disagree', () => {
    const known = new ResourceValidations();
    known.record('s', '"a"', at(10));
    known.record('s', '"b"', at(10));
    expect(known.confirmedAt('s', '"a"')).toBeUndefined();
    expect(known.confirmedAt('s', '"b"')).toBeUndefined();
    known.record('s', '"a"', at(10));
    known.record('s', '"a"', at(10));
    expect(known.confirmedAt('s', '"a"')?.at).toBe(10);
  });
});
