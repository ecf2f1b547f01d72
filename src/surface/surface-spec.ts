/**
 * One surface request as the ReadSpec the one read path serves (cache/read-spec.ts): its key,
 * what to ask the upstream (the request as sent: method, path and query, a POST body's exact
 * bytes and content-type), and its admission (admit-surface.ts), which for families that can be
 * final waits for the evidence (evidence.ts) before it stores anything as final. Pure but for
 * the evidence, which is injected.
 */
import { createHash } from 'node:crypto';
import type { ChainView } from '../chain/view.js';
import { passOn } from '../cache/admit.js';
import type { ReadSpec, UpstreamAsk } from '../cache/read-spec.js';
import { admitSurface, confirmSurface, normalTxId, wantsEvidence, type FinalEvidence, type SurfaceFacts } from './admit-surface.js';
import type { Family } from './families.js';
import { isTipKeyed, pinnedTip, principalOf, subjectsOf, surfaceKey, withoutProof, type SurfaceMatch } from './plan.js';

/** Where evidence for a final answer comes from (evidence.ts); undefined: none (yet). */
export interface SurfaceEvidence {
  /** The contract's deploy transaction is final: its height. */
  deployFinal(contractId: string): Promise<FinalEvidence | undefined>;
  /** The block (index block hash, no `0x`) is final and canonical: its height. */
  blockFinal(indexBlockHash: string): Promise<FinalEvidence | undefined>;
}

/** A surface request, decided: pure of the request target (memoized per method and URL). */
export interface SurfacePlan {
  family: Family;
  facts: SurfaceFacts;
  /** Path and query, as forwarded. */
  url: string;
  query: string;
  tipKeyed: boolean;
  /** The key's subject segment: what its entries are about (for purges). */
  subjects: string;
}

export function planOf(match: SurfaceMatch, url: string, query: string): SurfacePlan {
  const { family, params } = match;
  const principal = principalOf(match, url, query);
  const facts: SurfaceFacts = { family, params, finalizable: isFinalizable(family, query), ...(principal === undefined ? {} : { principal }) };
  return { family, facts, url, query, tipKeyed: isTipKeyed(family, query), subjects: subjectsOf(match, query) };
}

/**
 * Whether evidence could make an answer final: a pinned tip for pinned reads; a deploy-fixed
 * answer without a per-tip Merkle proof (the node adds a proof to a contract's source unless
 * `proof=0`; interface and constants carry none unless asked).
 */
function isFinalizable(family: Family, query: string): boolean {
  switch (family.evidence) {
    case 'pinned_tip':
      return pinnedTip(query) !== undefined;
    case 'deploy_tx':
      return withoutProof(query, family.id === 'contract_source');
    default:
      return false;
  }
}

/** A POST read's body: its canonical JSON text, or the bytes when it has none (forwarded, never stored). */
export type PostBody = { bytes: Buffer; contentType: string; canonical: string | undefined };

export interface SpecInput {
  plan: SurfacePlan;
  method: 'GET' | 'POST';
  keyPrefix: string;
  /** The chain now (for a tip-keyed key). */
  chain: ChainView;
  body?: PostBody;
  evidence: SurfaceEvidence;
}

/** The read spec, or undefined when the request cannot be keyed now (a tip-keyed read before any tip is known). */
export function surfaceSpec(input: SpecInput): ReadSpec | undefined {
  const { plan, body } = input;
  const { family, facts } = plan;
  // Tip-keyed reads carry the tip's hash; families that move with burn blocks alone, the burn height too.
  const hash = plan.tipKeyed ? input.chain.tipHash : '-';
  const burnHeight = family.burnKeyed ? input.chain.burnHeight : undefined;
  if (hash === undefined || (family.burnKeyed && burnHeight === undefined)) return undefined;
  const tip = hash === '-' && burnHeight === undefined ? undefined : { hash, burnHeight };
  // A body with no canonical form is keyed by its bytes (joined only by identical bytes) and never stored.
  const storable = body === undefined || body.canonical !== undefined;
  const canonicalBody = body === undefined ? undefined : (body.canonical ?? `!${createHash('sha256').update(body.bytes).digest('base64url')}`);
  const key = surfaceKey({ prefix: input.keyPrefix, method: input.method, family, url: plan.url, canonicalBody, tip, subjects: plan.subjects });
  const ask: UpstreamAsk =
    body === undefined
      ? { method: input.method, path: plan.url }
      : { method: input.method, path: plan.url, body: body.bytes, headers: { 'content-type': body.contentType } };
  return {
    key,
    label: family.id,
    ask,
    admit: async (answer, asked) => {
      if (!storable) return passOn(answer);
      const first = admitSurface(facts, answer, asked);
      if (first.kind !== 'entry' || first.entry.cls === 'final' || !wantsEvidence(facts, answer.status)) return first;
      const evidence = await gatherEvidence(input.evidence, plan);
      return evidence === undefined ? first : admitSurface(facts, answer, asked, evidence);
    },
    confirm: (entry, asked) => confirmSurface(facts, entry, asked),
    ...(storable && etagScopeOf(plan) !== undefined ? { etagScope: etagScopeOf(plan) } : {}),
  };
}

/**
 * The URLs whose upstream ETag is one value (cache/etag-scope.ts): the upstream computes a
 * principal's `principal` and `principal_mempool` ETags from the principal alone, whichever route
 * (the scope names are the 13 routes' own, so their entries and the families' confirm each
 * other); the `mempool` ETag is one global digest of the pending set, whatever the route and
 * query (`?address=` included); the `transaction` ETag is per transaction. When the upstream
 * gives one URL of a scope an entry's very ETag under the current tip, that entry is confirmed
 * without asking (read-path.ts). Chain-tip and block ETags are left out: they change with the tip,
 * under which entries are fresh anyway.
 */
function etagScopeOf(plan: SurfacePlan): string | undefined {
  const { family, facts } = plan;
  switch (family.change) {
    case 'etag:principal':
    case 'etag:principal_mempool': {
      const source = family.principal;
      const principal = source && 'param' in source ? facts.params[source.param] : undefined;
      return principal === undefined ? undefined : `${family.change.slice('etag:'.length)}:${principal}`;
    }
    case 'etag:mempool':
      return 'mempool';
    case 'etag:transaction': {
      const txId = facts.params.tx_id;
      return txId === undefined ? undefined : `transaction:${normalTxId(txId)}`;
    }
    default:
      return undefined;
  }
}

/** Evidence never fails a read: without it the answer is stored as what it is without it. */
async function gatherEvidence(evidence: SurfaceEvidence, plan: SurfacePlan): Promise<FinalEvidence | undefined> {
  const { family, facts, query } = plan;
  try {
    if (family.evidence === 'pinned_tip') {
      const tip = pinnedTip(query);
      return tip === undefined ? undefined : await evidence.blockFinal(tip);
    }
    if (family.evidence === 'deploy_tx') {
      const address = facts.params.contract_address;
      const name = facts.params.contract_name;
      return address === undefined || name === undefined ? undefined : await evidence.deployFinal(`${address}.${name}`);
    }
  } catch {
    return undefined;
  }
  return undefined;
}
