/**
 * Route matching mirrors the upstream's router over its whole public surface: every path of the
 * upstream's published descriptions, made concrete with real-looking values and with the literal
 * static segments the upstream has at each parameter's position, reaches the route the upstream
 * would pick: one of the 13 cached routes (by route id), or none (the passthrough).
 */
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { UPSTREAM_GET_ROUTES } from '../../src/routes/upstream-routes.js';
import {
  clientSchemaGetPaths,
  instantiate,
  normalizeTemplate,
  readSurfacePaths,
  shapeOf,
  upstreamGetTemplates,
  upstreamRouting,
  v7OpenApiGetPaths,
  v9OpenApiGetPaths,
  type Destination,
} from '../support/upstream-surface.js';

const match = createRouteMatcher(ROUTES);
const routing = upstreamRouting();

const destinationOf = (path: string): Destination => {
  const found = match(path.split('?')[0] as string);
  return found.kind === 'match' ? found.route.id : 'passthrough';
};

describe('the upstream route table', () => {
  it('is the upstream GET surface: every route of the client schema and the v9 OpenAPI, no other', () => {
    const table = new Set(UPSTREAM_GET_ROUTES.map(shapeOf));
    const upstream = new Set(upstreamGetTemplates().map(shapeOf));
    expect([...upstream].filter((t) => !table.has(t))).toEqual([]);
    expect([...table].filter((t) => !upstream.has(t))).toEqual([]);
    // The sources are what they claim: deprecated routes are in the client's schema only.
    expect(clientSchemaGetPaths()).toContain('/extended/v1/tx/mempool');
    expect(v9OpenApiGetPaths()).toContain('/extended/v2/blocks/average-times');
    expect(v9OpenApiGetPaths()).not.toContain('/extended/v1/tx/{tx_id}');
  });

  it('holds each of the 13 cached routes', () => {
    const table = new Set(UPSTREAM_GET_ROUTES.map(shapeOf));
    for (const route of ROUTES) expect(table.has(shapeOf(route.path)), route.path).toBe(true);
  });
});

describe('route precedence, as the upstream picks', () => {
  it('sends /extended/v1/tx/mempool and /extended/v2/blocks/average-times to the passthrough', () => {
    expect(destinationOf('/extended/v1/tx/mempool')).toBe('passthrough');
    expect(destinationOf('/extended/v1/tx/mempool/')).toBe('passthrough');
    expect(destinationOf('/extended/v2/blocks/average-times')).toBe('passthrough');
    // Static before parameter, and back to the parameter when the static branch leads nowhere.
    expect(destinationOf('/extended/v1/tx/mempool/stats')).toBe('mempool_stats');
    expect(destinationOf('/extended/v1/tx/mempoolx')).toBe('tx_by_id');
    expect(destinationOf('/extended/v1/tx/stats')).toBe('tx_by_id');
    expect(destinationOf('/extended/v2/blocks/average-times-x')).toBe('block');
    expect(destinationOf('/extended/v1/address/SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7/transactions/with_transfers')).toBe('tx_with_transfers');
    expect(destinationOf('/extended/v1/address/SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7/transactions_with_transfers')).toBe('passthrough');
    expect(destinationOf('/extended/v1/contract/by_trait/events')).toBe('contract_events');
    expect(destinationOf('/extended/v1/contract/by_trait')).toBe('passthrough');
  });

  it('matches the independent statement of the rule on hand-picked paths', () => {
    for (const path of ['/extended/v1/tx/mempool', '/extended/v1/tx/0xab', '/extended/v2/blocks/latest', '/v2/info', '/v2/prices/names/a.id']) {
      expect(destinationOf(path), path).toBe(routing.destination(path));
    }
    expect(routing.pick('/v2/prices/names/a.id')).toBe('/v2/prices/names/:name');
    expect(routing.pick('/v2/accounts/SP1')).toBe('/v2/*');
  });

  const sources: [string, () => string[]][] = [
    ['the client schema (deprecated routes included)', clientSchemaGetPaths],
    ['the v9 OpenAPI', v9OpenApiGetPaths],
    ['the v7 OpenAPI', v7OpenApiGetPaths],
    ['read-surface.md §1', readSurfacePaths],
  ];
  for (const [name, templatesOf] of sources) {
    it(`reaches the upstream's pick for every path of ${name}`, () => {
      const paths = instantiate(templatesOf(), routing, true);
      expect(paths.length).toBeGreaterThan(50);
      const wrong = paths.filter(({ path }) => destinationOf(path) !== routing.destination(path));
      expect(wrong.map(({ path, from }) => `${path} from ${from}: ${destinationOf(path)} != ${routing.destination(path)}`)).toEqual([]);
    });
  }

  it('reaches each cached route from its own template', () => {
    for (const route of ROUTES) {
      const template = upstreamGetTemplates().find((t) => shapeOf(t) === shapeOf(route.path)) as string;
      const [first] = instantiate([template], routing);
      expect(destinationOf((first as { path: string }).path), normalizeTemplate(template)).toBe(route.id);
    }
  });
});
