/**
 * The reads evidence.ts takes its evidence from, through the one read path: the 13 routes' tx and
 * block reads (their entries are final only when the block they name is the verified canonical
 * one below the finality watermark), and the surface's own contract_info read. An entry the cache
 * already holds and may serve now is used without asking anyone (and without counting a client
 * lookup); anything else is read as a client read would be. A read that fails is no evidence.
 */
import type { CacheEntry } from '../cache/entry.js';
import type { ReadPath } from '../cache/read-path.js';
import type { ReadSpec } from '../cache/read-spec.js';
import type { RouteReadSpecs } from '../cache/route-read-spec.js';
import type { ChainView } from '../chain/view.js';
import { ROUTE_BY_ID } from '../routes/route-table.js';
import type { RouteId } from '../routes/route-spec.js';
import { validateRequest } from '../routes/validate.js';
import { asOwn } from '../upstream/own-purpose.js';
import type { EvidenceReads } from './evidence.js';
import { matchSurface } from './plan.js';
import { planOf, surfaceSpec, type SurfaceEvidence } from './surface-spec.js';

export interface EvidenceReadDeps {
  readPath: Pick<ReadPath, 'read' | 'freshEntry'>;
  readSpecs: RouteReadSpecs;
  keyPrefix: string;
  chain: () => ChainView;
  /** The evidence the contract_info read's own spec would use (it never needs any). */
  evidence: () => SurfaceEvidence;
}

export function createEvidenceReads(deps: EvidenceReadDeps): EvidenceReads {
  async function entryFor(spec: ReadSpec | undefined): Promise<CacheEntry | undefined> {
    if (!spec) return undefined;
    const held = await deps.readPath.freshEntry(spec.key);
    if (held) return held;
    const result = await deps.readPath.read(spec);
    return result.cacheStatus === 'BYPASS' ? undefined : result.entry;
  }

  function routeSpec(id: RouteId, params: Record<string, string>): ReadSpec | undefined {
    const route = ROUTE_BY_ID.get(id);
    const outcome = route && validateRequest(route, params, '');
    return route && outcome?.kind === 'request' ? deps.readSpecs(route, outcome.request) : undefined;
  }

  return {
    // The proxy's own reads (counted by purpose when they reach the upstream: own-purpose.ts).
    transaction: (txId) => asOwn('contract_lookup', () => entryFor(routeSpec('tx_by_id', { tx_id: txId }))),
    block: (indexBlockHash) => asOwn('pinned_tip', () => entryFor(routeSpec('block', { height_or_hash: `0x${indexBlockHash}` }))),
    contract: (contractId) =>
      asOwn('contract_lookup', () => {
        const path = `/extended/v1/contract/${contractId}`;
        const match = matchSurface('GET', path, '');
        if (match?.family.id !== 'contract_info') return Promise.resolve(undefined);
        const spec = surfaceSpec({ plan: planOf(match, path, ''), method: 'GET', keyPrefix: deps.keyPrefix, chain: deps.chain(), evidence: deps.evidence() });
        return entryFor(spec);
      }),
  };
}
