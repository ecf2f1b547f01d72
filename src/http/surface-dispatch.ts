/**
 * The pipeline's step for the wider read surface (issue 15), after the 13 read routes and the
 * own endpoints, before the passthrough: a request that reaches a route family that caches
 * (src/surface/families.ts) is served through the one read path from its ReadSpec; anything
 * else returns false and goes on to the passthrough exactly as before (a `never` family, such as
 * POST /v2/transactions, included). Only paths the passthrough may forward are served here: the
 * operator's allow-list still says what of the upstream is reachable.
 *
 * POST reads (call-read, map_entry, fee estimates) are read here only when they are plain JSON
 * of an announced length within surface.maxPostBodyBytes; any other POST (chunked, larger,
 * another type, an encoded body) goes to the passthrough untouched. The body read is forwarded
 * byte for byte; its canonical JSON (surface/canonical-json.ts) is only its key.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChainView } from '../chain/view.js';
import type { Clock } from '../clock.js';
import { failureReply, internalError, type FailureReply } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LimitGrant } from '../limits/rate-limiter.js';
import type { ReadSpec } from '../cache/read-spec.js';
import type { Lookup, ReadContext, ReadResult } from '../cache/read-path.js';
import { canonicalJson } from '../surface/canonical-json.js';
import { caches } from '../surface/families.js';
import { matchSurface, MAX_SURFACE_URL_CHARS } from '../surface/plan.js';
import { planOf, surfaceSpec, type PostBody, type SurfaceEvidence, type SurfacePlan } from '../surface/surface-spec.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { UpstreamError } from '../upstream/errors.js';
import { BoundedMemo } from './bounded-memo.js';
import { readAnnouncedBody } from './read-body.js';
import type { Prefetch } from './read-handler.js';
import { observeRequest, type RequestRecord, type ServedReadSink } from './request-log.js';
import type { DecidedTarget } from './request-target.js';
import { sendError, sendResult } from './respond.js';

/** The one read path, as the surface uses it: a memory lookup (the hit path), then the read. */
export interface SpecReader {
  lookup(key: string): Lookup;
  read(spec: ReadSpec, first: Lookup, context: ReadContext): Promise<ReadResult>;
  /** The proxy's own read (the warm-up): an uncounted lookup, then the read a client's would make. */
  prefetch(spec: ReadSpec): Prefetch;
}

export interface SurfaceDispatchDeps {
  reader: SpecReader;
  evidence: SurfaceEvidence;
  chain: () => ChainView;
  keyPrefix: string;
  maxPostBodyBytes: number;
  /** The passthrough's allow-list (passthrough.allowedPrefixes). */
  allows: (path: string) => boolean;
  telemetry: Telemetry;
  logger: Logger;
  now: Clock;
  /** Told of each GET answered 200 from a tip-class or tip-keyed entry (the warm-up's hot URLs). */
  servedRead?: ServedReadSink;
}

export type SurfaceRead = (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant) => boolean;

export interface SurfaceDispatcher extends SurfaceRead {
  /**
   * The proxy's own GET of `target` (the warm-up), planned as a client's GET with no
   * Authorization: the same key (the tip's, for tip-keyed families), admission, single-flight
   * and evidence; no response, no rate-limit charge. Undefined when it is not a surface read
   * that caches now (another family, off the allow-list, no tip known yet).
   */
  prefetch(target: DecidedTarget): Prefetch | undefined;
}

/** `application/json`, optionally with `charset=utf-8`: the only bodies whose canonical form the node reads alike. */
const JSON_CONTENT_TYPE = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;
const DECIMAL = /^[0-9]{1,9}$/;

const PLAN_MEMO_ENTRIES = 4096;
const PLAN_MEMO_KEY_LENGTH = 1024;

export function createSurfaceDispatcher(deps: SurfaceDispatchDeps): SurfaceDispatcher {
  // A plan is a pure function of the method and the decided target; null: not a surface read.
  const plans = new BoundedMemo<SurfacePlan | null>(PLAN_MEMO_ENTRIES, PLAN_MEMO_KEY_LENGTH);
  const planFor = (method: 'GET' | 'POST', target: DecidedTarget): SurfacePlan | null => {
    const match = matchSurface(method, target.path, target.query);
    return match && caches(match.family) ? planOf(match, target.url, target.query) : null;
  };

  /**
   * A GET's spec is a pure function of its plan and, for tip-keyed families, the tip: kept with
   * the plan while the tip stays, so a hit builds no key and no closures.
   */
  const specs = new WeakMap<SurfacePlan, { tip: string | undefined; burn: number | undefined; spec: ReadSpec | undefined }>();
  function getSpec(plan: SurfacePlan): ReadSpec | undefined {
    const chain = deps.chain();
    const tip = plan.tipKeyed ? chain.tipHash : undefined;
    const burn = plan.family.burnKeyed ? chain.burnHeight : undefined;
    const known = specs.get(plan);
    if (known && known.tip === tip && known.burn === burn) return known.spec;
    const spec = surfaceSpec({ plan, method: 'GET', keyPrefix: deps.keyPrefix, chain, evidence: deps.evidence });
    specs.set(plan, { tip, burn, spec });
    return spec;
  }

  const prefetch = (target: DecidedTarget): Prefetch | undefined => {
    if (target.url.length > MAX_SURFACE_URL_CHARS) return undefined;
    const plan = plans.get(`GET ${target.url}`, () => planFor('GET', target));
    if (!plan || !deps.allows(target.path)) return undefined;
    if ((plan.tipKeyed && deps.chain().tipHash === undefined) || (plan.family.burnKeyed && deps.chain().burnHeight === undefined)) return undefined;
    const spec = getSpec(plan);
    return spec ? deps.reader.prefetch(spec) : undefined;
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant): boolean => {
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (method !== 'GET' && method !== 'POST') return false;
    if (target.url.length > MAX_SURFACE_URL_CHARS) return false;
    const plan = plans.get(`${method} ${target.url}`, () => planFor(method, target));
    // A client's credential never reaches the upstream (forward-policy.ts), but a request that
    // carries one is left to the passthrough: nothing it is answered is stored.
    if (!plan || !deps.allows(target.path) || req.headers.authorization !== undefined) return false;
    // A tip-keyed read before any tip is known cannot be keyed: uncached, as before.
    if ((plan.tipKeyed && deps.chain().tipHash === undefined) || (plan.family.burnKeyed && deps.chain().burnHeight === undefined)) return false;
    if (method === 'GET') {
      const spec = getSpec(plan);
      if (!spec) return false;
      serve(req, res, plan, spec, observeRequest(req, res, deps, limit));
      return true;
    }
    const length = postBodyLength(req, deps.maxPostBodyBytes);
    if (length === undefined) return false;
    const record = observeRequest(req, res, deps, limit);
    record.route = plan.family.id;
    const contentType = req.headers['content-type'] as string;
    void readAnnouncedBody(req, length)
      .then((bytes) => {
        if (!bytes) {
          // The client went away (or sent less than it announced): there is no one to answer.
          record.cache = 'NONE';
          res.destroy();
          record.answered(400);
          return;
        }
        const canonical = canonicalJson(bytes);
        const body: PostBody = { bytes, contentType, canonical: canonical.kind === 'json' ? canonical.text : undefined };
        const spec = surfaceSpec({ plan, method, keyPrefix: deps.keyPrefix, chain: deps.chain(), body, evidence: deps.evidence });
        if (!spec) {
          record.answered(sendError(res, internalError('proxy error'), 'NONE', record.headers));
          return;
        }
        serve(req, res, plan, spec, record);
      })
      .catch((error: unknown) => {
        // Nothing here is expected to throw; if it does, the client gets a 500 and the process goes on.
        deps.logger.error({ err: error, family: plan.family.id }, 'unexpected error while reading a POST read');
        if (res.headersSent) res.destroy();
        else record.answered(sendError(res, internalError('proxy error'), 'NONE', record.headers));
      });
    return true;
  };
  return Object.assign(dispatch, { prefetch });

  function serve(req: IncomingMessage, res: ServerResponse, plan: SurfacePlan, spec: ReadSpec, record: RequestRecord): void {
    record.route = plan.family.id;
    record.tipKeyed = plan.tipKeyed;
    const first = deps.reader.lookup(spec.key);
    if (first.decision.action === 'fresh') {
      const hit = first.decision.entry;
      record.cache = 'HIT';
      record.cls = hit.cls;
      deps.telemetry.surfaceServed(plan.family.id, plan.family.change, 'HIT', hit.cls);
      record.answered(sendResult(req, res, { cacheStatus: 'HIT', entry: hit }, deps.now(), record.headers));
      return;
    }
    const read = (): void => answer(deps.reader.read(spec, first, { requestId: record.requestId }), req, res, plan, record);
    // Rate limits (issue 9): a read the memory tier cannot answer pays the rest of a miss first.
    const charge = record.limit?.chargeMiss?.(record.headers);
    if (charge === undefined || charge === null) read();
    else if (charge instanceof Promise)
      charge.then(
        (refusal) => (refusal ? refuse(res, record, refusal) : read()),
        () => read(),
      );
    else refuse(res, record, charge);
  }

  function refuse(res: ServerResponse, record: RequestRecord, refusal: FailureReply): void {
    record.refused = true;
    record.answered(sendError(res, refusal, 'NONE', [...refusal.headers, ...record.headers]));
  }

  function answer(reading: Promise<ReadResult>, req: IncomingMessage, res: ServerResponse, plan: SurfacePlan, record: RequestRecord): void {
    reading.then(
      (result) => {
        record.cache = result.cacheStatus;
        const cls = result.cacheStatus === 'BYPASS' ? 'none' : result.entry.cls;
        if (result.cacheStatus !== 'BYPASS') record.cls = result.entry.cls;
        record.upstreamSeconds = result.upstreamSeconds;
        deps.telemetry.surfaceServed(plan.family.id, plan.family.change, result.cacheStatus, cls);
        record.answered(sendResult(req, res, result, deps.now(), record.headers));
      },
      (error: unknown) => {
        record.cache = 'MISS';
        deps.telemetry.surfaceServed(plan.family.id, plan.family.change, 'MISS', 'none');
        if (!(error instanceof UpstreamError)) {
          deps.logger.error({ err: error, family: plan.family.id }, 'unexpected error while reading');
          record.answered(sendError(res, internalError('proxy error'), 'MISS', record.headers));
          return;
        }
        record.upstreamError = error.kind;
        const failure = failureReply(error.kind, error.retryAfterMs);
        record.answered(sendError(res, failure, 'MISS', [...failure.headers, ...record.headers]));
      },
    );
  }
}

/**
 * The body length of a POST read this step takes: JSON, announced with a Content-Length within
 * the bound, not chunked, not encoded. Undefined: the passthrough's.
 */
export function postBodyLength(req: IncomingMessage, maxBytes: number): number | undefined {
  const headers = req.headers;
  const type = headers['content-type'];
  if (typeof type !== 'string' || !JSON_CONTENT_TYPE.test(type.trim())) return undefined;
  if (headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) return undefined;
  const announced = headers['content-length'];
  if (typeof announced !== 'string' || !DECIMAL.test(announced)) return undefined;
  const length = Number(announced);
  return length <= maxBytes ? length : undefined;
}
