/**
 * The handler for one of the 13 read routes: validate, look up, answer. The route's row names
 * its reader: `single` routes look up memory once, synchronously, through the read path, and a
 * fresh entry is written at once; anything else goes on to the read path with that same lookup
 * and the request's ReadSpec (prepared with the request, once per URL). `tx-list` routes are
 * built per transaction by the tx/multiple reader.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteSpec } from '../routes/route-spec.js';
import { validateRequest, type CanonicalRequest } from '../routes/validate.js';
import type { ReadPath, ReadResult } from '../cache/read-path.js';
import type { ReadSpec } from '../cache/read-spec.js';
import type { RouteReadSpecs } from '../cache/route-read-spec.js';
import type { TxListReader } from '../cache/tx-list.js';
import { UpstreamError } from '../upstream/errors.js';
import { failureReply, internalError, type ErrorReply, type FailureReply } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { sendError, sendRedirect, sendResult } from './respond.js';
import type { RequestRecord } from './request-log.js';

export interface ReadHandlerDeps {
  readPath: ReadPath;
  /** The ReadSpec of a single-reader request (route-read-spec.ts). */
  readSpecs: RouteReadSpecs;
  txList: TxListReader;
  logger: Logger;
  /** The composition root's clock (Age headers). */
  now: Clock;
}

/**
 * What a request URL comes to on one route before any cache or request state is consulted: the
 * upstream's error, a redirect, or the canonical request with its ReadSpec (single reader; its
 * key is the cache key). A pure function of the URL, so the dispatcher memoizes it per URL.
 */
export type PreparedRead =
  | { kind: 'error'; error: ErrorReply }
  | { kind: 'redirect'; location: string }
  /** Not cached: the dispatcher leaves it to the passthrough. */
  | { kind: 'passthrough' }
  | { kind: 'request'; request: CanonicalRequest; spec: ReadSpec | undefined };

/** What the handler answers itself: everything prepared but what it leaves to the passthrough. */
export type ServedRead = Exclude<PreparedRead, { kind: 'passthrough' }>;

/**
 * The proxy's own read of a prepared request (the warm-up of a new block): whether memory holds
 * it fresh already, and the read a client's request would make, without a response to write.
 */
export interface Prefetch {
  fresh: boolean;
  read(): Promise<ReadResult>;
}

export interface ReadHandler {
  prepare(params: Record<string, string>, rawQuery: string): PreparedRead;
  serve(req: IncomingMessage, res: ServerResponse, prepared: ServedRead, record: RequestRecord): void;
  /** Undefined for what is not read from the cache (an error, a redirect). */
  prefetch(prepared: ServedRead): Prefetch | undefined;
}

export function createReadHandler(route: RouteSpec, deps: ReadHandlerDeps): ReadHandler {
  const now = deps.now;
  const single = route.reader === 'single';
  return { prepare, serve, prefetch };

  function prepare(params: Record<string, string>, rawQuery: string): PreparedRead {
    const outcome = validateRequest(route, params, rawQuery);
    if (outcome.kind !== 'request') return outcome;
    return { kind: 'request', request: outcome.request, spec: single ? deps.readSpecs(route, outcome.request) : undefined };
  }

  function prefetch(prepared: ServedRead): Prefetch | undefined {
    if (prepared.kind !== 'request') return undefined;
    const { request, spec } = prepared;
    if (spec !== undefined) return deps.readPath.prefetch(spec);
    // tx/multiple: its members are looked up (uncounted) by the read itself.
    return { fresh: false, read: () => deps.txList.read(route, request, { own: true }) };
  }

  function serve(req: IncomingMessage, res: ServerResponse, prepared: ServedRead, record: RequestRecord): void {
    record.route = route.id;
    if (prepared.kind === 'error') {
      record.cache = 'BYPASS';
      record.answered(sendError(res, prepared.error, 'BYPASS', record.headers));
      return;
    }
    if (prepared.kind === 'redirect') {
      record.cache = 'BYPASS';
      record.answered(sendRedirect(res, prepared.location, record.headers));
      return;
    }
    const { request, spec } = prepared;
    let lookup: ReturnType<ReadPath['lookup']> | undefined;
    if (spec !== undefined) {
      lookup = deps.readPath.lookup(spec.key);
      if (lookup.decision.action === 'fresh') {
        const hit = lookup.decision.entry;
        record.cache = 'HIT';
        record.cls = hit.cls;
        record.answered(sendResult(req, res, { cacheStatus: 'HIT', entry: hit }, now(), record.headers));
        return;
      }
    }
    const read = (): void => {
      const context = { requestId: record.requestId };
      answer(spec && lookup ? deps.readPath.read(spec, lookup, context) : deps.txList.read(route, request, context), res, req, record);
    };
    // Rate limits (issue 9): a request the memory tier cannot answer pays the rest of a miss first.
    const charge = record.limit?.chargeMiss?.(record.headers);
    if (charge === undefined) read();
    else if (charge instanceof Promise)
      charge.then(
        (refusal) => (refusal ? refuse(refusal) : read()),
        () => read(),
      );
    else if (charge === null) read();
    else refuse(charge);

    function refuse(refusal: FailureReply): void {
      record.refused = true;
      record.answered(sendError(res, refusal, 'NONE', [...refusal.headers, ...record.headers]));
    }
  }

  function answer(reading: Promise<ReadResult>, res: ServerResponse, req: IncomingMessage, record: RequestRecord): void {
    reading.then(
      (result) => {
        record.cache = result.cacheStatus;
        if (result.cacheStatus !== 'BYPASS') record.cls = result.entry.cls;
        record.upstreamSeconds = result.upstreamSeconds;
        record.answered(sendResult(req, res, result, now(), record.headers));
      },
      (error: unknown) => {
        record.cache = 'MISS';
        if (!(error instanceof UpstreamError)) {
          deps.logger.error({ err: error, route: route.id }, 'unexpected error while reading');
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
