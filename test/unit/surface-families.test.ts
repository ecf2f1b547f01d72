/**
 * The table of route families (src/surface/families.ts) against the upstream's own route list:
 * every upstream GET route is one of the 13 routes, in exactly one family, or named as passed
 * through; matching follows the upstream router's precedence, after the 13 routes.
 */
import { describe, expect, it } from 'vitest';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { ROUTES } from '../../src/routes/route-table.js';
import { UPSTREAM_GET_ROUTES } from '../../src/routes/upstream-routes.js';
import { FAMILIES, FAMILY_BY_ID, PASSED_THROUGH_ROUTES, isNodeRpc } from '../../src/surface/families.js';
import { matchSurface } from '../../src/surface/plan.js';
import { clientSchemaGetPaths, normalizeTemplate, shapeOf } from '../support/upstream-surface.js';

const ADDRESS = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const TX = `0x${'ab'.repeat(32)}`;

const trim = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
const cachedShapes = new Set(ROUTES.map((r) => shapeOf(r.path)));

/** The family ids a template's shape is in. */
function familiesOf(template: string): string[] {
  const shape = shapeOf(template);
  return FAMILIES.filter((f) => f.routes.some((r) => shapeOf(r) === shape)).map((f) => f.id);
}

describe('the family table', () => {
  it('puts every upstream GET route in the 13 routes, exactly one family, or the passed-through list', () => {
    for (const route of UPSTREAM_GET_ROUTES) {
      const homes = [
        ...(cachedShapes.has(shapeOf(route)) ? ['13 routes'] : []),
        ...familiesOf(route),
        ...(PASSED_THROUGH_ROUTES.has(route) ? ['passthrough'] : []),
      ];
      expect(homes, route).toHaveLength(1);
    }
  });

  it("covers the official client's v9 GET routes too (v3 included)", () => {
    for (const template of clientSchemaGetPaths()) {
      const normal = normalizeTemplate(template);
      const placed = cachedShapes.has(shapeOf(normal)) || familiesOf(normal).length === 1 || PASSED_THROUGH_ROUTES.has(normal);
      expect(placed, template).toBe(true);
    }
  });

  it('names only routes the upstream has: its GET routes, or node RPC under /v2', () => {
    const upstreamShapes = new Set(UPSTREAM_GET_ROUTES.map(shapeOf));
    for (const family of FAMILIES) {
      for (const route of family.routes) {
        if (family.method === 'POST' || isNodeRpc(route)) expect(isNodeRpc(route), `${family.id} ${route}`).toBe(true);
        else expect(upstreamShapes.has(shapeOf(route)), `${family.id} ${route}`).toBe(true);
      }
    }
  });

  it('has unique snake_case ids, a reason each, and variants that exist with the same routes reachable', () => {
    expect(new Set(FAMILIES.map((f) => f.id)).size).toBe(FAMILIES.length);
    for (const family of FAMILIES) {
      expect(family.id).toMatch(/^[a-z][a-z0-9_]{1,40}$/);
      expect(family.why.length).toBeGreaterThan(10);
      if (family.variant) expect(FAMILY_BY_ID.get(family.variant.family)?.method).toBe(family.method);
      if (family.evidence === 'pinned_tip') expect(family.change).toBe('tip');
      if (family.evidence === 'raw_tx' || family.evidence === 'deploy_tx') expect(family.change).toBe('immutable');
      if (family.change === 'immutable') expect(family.evidence).toBeDefined();
    }
  });

  it('reaches every family route with sample parameters (no route is shadowed)', () => {
    for (const family of FAMILIES) {
      for (const route of family.routes) {
        const path = trim(route.replace(/:[^/]+/g, 'x1y'));
        const method = family.method;
        expect(matchSurface(method, path, '')?.family.id, `${method} ${path}`).toBe(family.id);
      }
    }
  });
});

describe('matching, after the 13 routes, with the upstream router precedence', () => {
  const cases: Array<[string, string, string, string | undefined]> = [
    ['GET', '/extended/v1/tx/mempool', 'address=' + ADDRESS, 'mempool'],
    ['GET', `/extended/v1/tx/${TX}/raw`, '', 'tx_raw'],
    ['GET', `/extended/v1/tx/${TX}`, '', undefined], // 13 routes: tx_by_id
    ['GET', '/extended/v1/tx/events', '', undefined], // 13 routes: tx_events
    ['GET', '/extended/v1/tx/mempool/stats', '', undefined], // 13 routes
    ['GET', '/extended/v1/pox4/events', '', 'pox_events'],
    ['GET', `/extended/v1/address/${ADDRESS}/nonces`, '', 'address_nonces'],
    ['GET', `/extended/v1/address/${ADDRESS}/balances`, '', undefined], // 13 routes
    ['GET', `/extended/v1/address/${ADDRESS}/${TX}/with_transfers`, '', undefined], // 13 routes
    ['GET', `/extended/v2/addresses/${ADDRESS}/balances/stx`, '', 'balances_stx'],
    ['GET', `/extended/v2/addresses/${ADDRESS}/balances/stx`, 'include_mempool=true', 'balances_stx_pending'],
    ['GET', `/extended/v2/addresses/${ADDRESS}/transactions`, '', undefined], // 13 routes
    ['GET', '/extended/v2/blocks/', 'limit=10', 'blocks'],
    ['GET', '/extended/v2/blocks', '', 'blocks'],
    ['GET', '/extended/v2/blocks/average-times', '', 'blocks'],
    ['GET', '/extended/v2/blocks/123', '', undefined], // 13 routes: block
    ['GET', '/extended/v2/blocks/123/transactions', '', 'block_transactions'],
    ['GET', `/extended/v3/principals/${ADDRESS}/nonces`, '', 'address_nonces'],
    ['GET', `/extended/v3/transactions/${TX}`, '', 'transaction_detail'],
    ['GET', '/extended/v3/transactions', '', 'tx_lists'],
    ['GET', `/v2/accounts/${ADDRESS}`, 'proof=0', 'v2_accounts'],
    ['HEAD', `/v2/accounts/${ADDRESS}`, '', 'v2_accounts'],
    ['GET', `/v2/accounts/${ADDRESS}/extra`, '', undefined],
    ['GET', '/v2/info', '', 'v2_info'],
    ['GET', '/v2/prices/names/muneeb.id', '', 'bns'],
    ['GET', '/v2/neighbors', '', undefined],
    ['GET', `/v2/contracts/interface/${ADDRESS}/pox-4`, '', 'contract_interface'],
    ['POST', `/v2/contracts/call-read/${ADDRESS}/pox-4/get-info`, '', 'call_read'],
    ['GET', `/v2/contracts/call-read/${ADDRESS}/pox-4/get-info`, '', undefined],
    ['POST', '/v2/transactions', '', 'broadcast'],
    ['POST', '/v2/fees/transaction', '', 'fee_estimate'],
    ['GET', '/v2/fees/transaction', '', undefined],
    ['POST', '/extended/v1/tx/mempool', '', undefined],
    ['PUT', '/v2/info', '', undefined],
    ['GET', '/', '', undefined],
    ['GET', `/extended/v1/address/${'x'.repeat(101)}/nonces`, '', undefined], // longer than the upstream's maxParamLength
  ];
  it.each(cases)('%s %s?%s → %s', (method, path, query, expected) => {
    expect(matchSurface(method, path, query)?.family.id).toBe(expected);
  });

  it('never claims a path one of the 13 routes takes', () => {
    const matchCached = createRouteMatcher(ROUTES);
    for (const route of ROUTES) {
      const path = trim(route.path.replace(/:[^/]+/g, 'x1y'));
      expect(matchCached(path).kind).toBe('match');
      expect(matchSurface('GET', path, '')).toBeUndefined();
    }
  });
});
