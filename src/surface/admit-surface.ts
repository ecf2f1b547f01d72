/**
 * Admission for the wider read surface (pure): what an upstream answer of a family becomes.
 * The upstream validated the request itself, so what it refused is passed on as it answered
 * (status and body bytes); only a 200 is stored (a 404 briefly where a later block can create the
 * thing, a 410 Gone briefly as mempool class: an operator may turn deprecated routes back on).
 * The class an answer is stored under follows the family's change class; nothing is final
 * without evidence (`FinalEvidence`, gathered by the caller: surface/evidence.ts).
 */
import { createHash } from 'node:crypto';
import type { ChainView } from '../chain/view.js';
import { disagreeing, entryFromAnswer, passOn, stamp, type Admission, type Confirmation, type Snapshot } from '../cache/admit.js';
import type { CacheEntry, FreshnessClass } from '../cache/entry.js';
import { classifyTransaction, isContradiction, parseJson, type Classification, type Judgement } from '../cache/policy.js';
import type { UpstreamResponse } from '../upstream/client.js';
import { UpstreamError } from '../upstream/errors.js';
import type { Family } from './families.js';

/** What a request of a family is, as admission needs it (from plan.ts). */
export interface SurfaceFacts {
  family: Family;
  params: Readonly<Record<string, string>>;
  /** The principal entries are about (CacheEntry.principal). */
  principal?: string;
  /**
   * Whether evidence could make an answer final at all (the request pins a tip, or asks
   * without a per-tip proof): when false, `evidence` is never asked for.
   */
  finalizable: boolean;
}

/** Evidence gathered for one answer: the height of the final block it is fixed by. */
export interface FinalEvidence {
  /** The Stacks height of the final block that fixes the answer (0: the answer depends on no block). */
  height: number;
}

/** Stored 410s and cacheable 404s are held only this briefly: their class's TTL. */
const GONE_CLASS: FreshnessClass = 'mempool';

const isJsonType = (type: string | undefined): boolean => (type ?? '').toLowerCase().includes('json');

const asObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** A txid as the upstream compares them: lower-case hex, without `0x`. */
export const normalTxId = (id: string): string => (id.startsWith('0x') || id.startsWith('0X') ? id.slice(2) : id).toLowerCase();

const HEX = /^(?:0x)?((?:[0-9a-fA-F]{2})*)$/;

/**
 * Whether a /tx/{id}/raw body is that transaction's bytes: a transaction's id is the SHA-512/256
 * of its serialization, so bytes that hash to the id asked for are the only answer there can be.
 */
export function rawTxMatches(json: unknown, txId: string): boolean {
  const raw = asObject(json)?.raw_tx;
  if (typeof raw !== 'string') return false;
  const hex = HEX.exec(raw);
  if (!hex || hex[1] === '') return false;
  const digest = createHash('sha512-256')
    .update(Buffer.from(hex[1] as string, 'hex'))
    .digest('hex');
  return digest === normalTxId(txId);
}

/** A body about another transaction than the one asked for: that upstream failed the request. */
interface OtherResource {
  otherResource: string;
}

const isOtherResource = (judged: Judgement | OtherResource): judged is OtherResource => 'otherResource' in judged;

/** What the body says about the class, before any evidence (undefined: pass on, unstored). */
function classifyOk(facts: SurfaceFacts, json: unknown, chain: ChainView): Judgement | OtherResource | undefined {
  const { family, params } = facts;
  // A body the mempool can change is never held past the mempool class, whatever its key's kind.
  const cls: FreshnessClass = family.mempoolDependent ? 'mempool' : 'tip';
  switch (family.change) {
    case 'never':
      return undefined;
    case 'etag:mempool':
    case 'etag:principal_mempool':
      return { cls: 'mempool' };
    case 'etag:transaction': {
      const tx = asObject(json);
      const asked = params.tx_id;
      // Only a body that is the transaction asked for is classified as one; events and balance changes move with the tip.
      if (!tx || asked === undefined || typeof tx.tx_id !== 'string' || typeof tx.tx_status !== 'string') return { cls: 'tip' };
      if (normalTxId(tx.tx_id) !== normalTxId(asked)) return { otherResource: `asked for tx ${asked}, got tx_id ${tx.tx_id}` };
      return classifyTransaction(tx, chain);
    }
    case 'immutable':
      if (family.evidence === 'raw_tx') {
        // Bytes that are not the transaction asked for are passed on as the upstream sent them, never stored.
        return rawTxMatches(json, params.tx_id ?? '') ? { cls: 'final', height: 0 } : undefined;
      }
      return { cls };
    default:
      return { cls };
  }
}

/**
 * Whether a pinned read's body is the chain's answer, which a final block fixes for good, and not
 * the node's own failure to compute it: a read-only call answered `{"okay":false,"cause":...}`
 * (a runtime cost limit, which is the node's `read_only_call_limit` setting, or another node-side
 * error) may be answered `okay:true` by another node or after a configuration change. A map entry
 * or data var answer carries its value as `data`. Anything else is not made final by the block.
 */
function isChainAnswer(facts: SurfaceFacts, json: unknown): boolean {
  if (facts.family.evidence !== 'pinned_tip') return true;
  const body = asObject(json);
  if (!body) return false;
  return facts.family.id === 'call_read' ? body.okay === true : typeof body.data === 'string';
}

/** The class an answer is stored under, given its evidence (if any was gathered). */
function finalWith(judged: Classification, evidence: FinalEvidence | undefined): Classification {
  return evidence === undefined || judged.cls === 'final' ? judged : { cls: 'final', height: evidence.height };
}

/** Whether an answer of this status could be made final by evidence (the caller then gathers it). */
export function wantsEvidence(facts: SurfaceFacts, status: number): boolean {
  const evidence = facts.family.evidence;
  return status === 200 && facts.finalizable && (evidence === 'deploy_tx' || evidence === 'pinned_tip');
}

/**
 * A chain-tip ETag: a block hash, `"0x"` and 64 hex digits (upstream-contract.md §3). The
 * upstream's mempool ETag is a timestamp (an older one a digest), never this.
 */
const CHAIN_TIP_ETAG = /^"0x[0-9a-f]{64}"$/i;

/**
 * Whether the upstream's ETag on this answer moves with what the answer moves with. The v3
 * mempool list carries the chain-tip ETag (its preHandler is handleChainTipCache): a 304 to it
 * would confirm a list the mempool has changed since, so it is never revalidated with.
 */
function etagTracksAnswer(facts: SurfaceFacts, etag: string): boolean {
  return !(facts.family.change === 'etag:mempool' && CHAIN_TIP_ETAG.test(etag));
}

function entryOf(facts: SurfaceFacts, response: UpstreamResponse, classification: Classification, asked: Snapshot, json?: unknown): CacheEntry {
  const entry = entryFromAnswer(response, classification, asked, facts.principal);
  // Clients still get the upstream's ETag (entry.etag), as the upstream sends it.
  if (entry.upstreamEtag !== undefined && !etagTracksAnswer(facts, entry.upstreamEtag)) delete entry.upstreamEtag;
  if (facts.principal === undefined) return entry;
  const movesWith = facts.family.movesWith;
  if (movesWith !== undefined) entry.movesWith = movesWith;
  else if (facts.family.movesWithWhenUnlocked && response.status === 200 && showsNothingLocked(json)) entry.movesWith = 'transactions';
  return entry;
}

/** A zero amount as the upstream writes it: decimal (`"0"`, the API) or hex (`"0x000…0"`, the node's u128). */
const isZeroAmount = (value: unknown): boolean => typeof value === 'string' && /^(?:0|0x0+)$/.test(value);

/**
 * An STX balance answer with no STX locked and no unlock pending: v2 balances/stx (`locked`,
 * `burnchain_unlock_height`) or /v2/accounts (`locked`, `unlock_height`). Anything else (a
 * field missing, another shape) is not known to be unlocked.
 */
export function showsNothingLocked(json: unknown): boolean {
  const body = asObject(json);
  if (!body || !isZeroAmount(body.locked)) return false;
  const unlockHeight = 'burnchain_unlock_height' in body ? body.burnchain_unlock_height : body.unlock_height;
  return unlockHeight === 0;
}

const invalid = (response: UpstreamResponse, why: string): Admission => ({
  kind: 'failure',
  error: new UpstreamError('invalid', response.upstream, `${why} from ${response.upstream} (status ${response.status})`),
});

/** An upstream answer of a family as an entry, a pass-on or a failure; `evidence` when the caller gathered it. */
export function admitSurface(facts: SurfaceFacts, response: UpstreamResponse, asked: Snapshot, evidence?: FinalEvidence): Admission {
  const { family } = facts;
  if (family.change === 'never') return passOn(response);
  if (response.status === 410) return { kind: 'entry', entry: entryOf(facts, response, { cls: GONE_CLASS }, asked) };
  if (response.status === 404) {
    return family.notFound ? { kind: 'entry', entry: entryOf(facts, response, { cls: family.notFound }, asked) } : passOn(response);
  }
  if (response.status !== 200) return passOn(response);
  let json: unknown;
  if (isJsonType(response.headers['content-type'])) {
    json = parseJson(response.body);
    // A body that says it is JSON and is not (an error page in between, a cut body): that upstream failed.
    if (json === undefined) return invalid(response, 'invalid JSON');
  }
  const judged = classifyOk(facts, json, asked.chain);
  if (!judged) return passOn(response);
  if (isOtherResource(judged)) return invalid(response, `an answer about another resource: ${judged.otherResource}`);
  if (isContradiction(judged)) return disagreeing(response, judged);
  const classification = finalWith(judged, evidence !== undefined && isChainAnswer(facts, json) ? evidence : undefined);
  const entry = entryOf(facts, response, classification, asked, json);
  return classification.unverified === undefined ? { kind: 'entry', entry } : { kind: 'entry', entry, unverified: classification.unverified };
}

/**
 * What a 304 makes of a stored entry: the same bytes, validated now. Its class is decided again
 * from the stored body (a transaction may have been mined meanwhile); a final entry stays final.
 */
export function confirmSurface(facts: SurfaceFacts, entry: CacheEntry, asked: Snapshot): Confirmation {
  if (entry.cls === 'final') return { kind: 'entry', entry: { ...entry, validatedAt: asked.at } };
  let classification: Judgement | OtherResource = { cls: entry.cls, height: entry.height };
  if (entry.status === 200 && facts.family.change === 'etag:transaction') {
    const json = isJsonType(entry.headers['content-type']) ? parseJson(entry.body) : undefined;
    classification = classifyOk(facts, json, asked.chain) ?? classification;
  }
  if (isOtherResource(classification)) {
    return { kind: 'failure', error: new UpstreamError('invalid', 'cache', `stored bytes are about another resource: ${classification.otherResource}`) };
  }
  if (isContradiction(classification)) {
    return { kind: 'failure', error: new UpstreamError('invalid', 'cache', `stored bytes disagree with the verified chain: ${classification.contradiction}`) };
  }
  const confirmed = { ...entry, ...stamp(classification, asked) };
  return classification.unverified === undefined
    ? { kind: 'entry', entry: confirmed }
    : { kind: 'entry', entry: confirmed, unverified: classification.unverified };
}
