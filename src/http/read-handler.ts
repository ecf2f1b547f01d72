/**
 * The handler for one of the 13 read routes: validate, look up, answer. The route's row names
 * its reader: `single` routes look up memory once, synchronously, and a fresh entry is written
 * at once; anything else goes on to the read-through with that same lookup. `tx-list` routes
 * are built per transaction by the tx/multiple reader.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteSpec } from '../routes/route-spec.js';
import { validateRequest } from '../routes/validate.js';
import type { ReadThrough, ReadResult } from '../cache/read-through.js';
import type { TxListReader } from '../cache/tx-list.js';
import { UpstreamError } from '../upstream/errors.js';
import { failureReply, internalError, type FailureReply } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { sendError, sendHit, sendRedirect, sendResult } from './respond.js';
import type { RequestRecord } from './request-log.js';

export interface ReadHandlerDeps {
  readThrough: ReadThrough;
  txList: TxListReader;
  logger: Logger;
  /** The composition root's clock (Age headers). */
  now: Clock;
}

export type ReadHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
  rawQuery: string,
  record: RequestRecord,
) => void;

export function createReadHandler(route: RouteSpec, deps: ReadHandlerDeps): ReadHandler {
  const now = deps.now;
  return (req, res, params, rawQuery, record) => {
    record.route = route.id;
    const outcome = validateRequest(route, params, rawQuery);
    if (outcome.kind === 'error') {
      record.cache = 'BYPASS';
      record.status = sendError(res, outcome.error, 'BYPASS', record.headers);
      return;
    }
    if (outcome.kind === 'redirect') {
      record.cache = 'BYPASS';
      record.status = sendRedirect(res, outcome.location, record.headers);
      return;
    }
    const request = outcome.request;
    let lookup: ReturnType<ReadThrough['lookup']> | undefined;
    if (route.reader === 'single') {
      lookup = deps.readThrough.lookup(deps.readThrough.keyFor(route, request));
      if (lookup.decision.action === 'fresh') {
        const hit = lookup.decision.entry;
        record.cache = 'HIT';
        record.cls = hit.cls;
        if (req.headers['if-none-match'] === undefined) {
          sendHit(res, hit, now(), record.headers);
          record.status = hit.status;
        } else {
          record.status = sendResult(req, res, { cacheStatus: 'HIT', entry: hit }, now(), record.headers);
        }
        return;
      }
    }
    const read = (): void => {
      const context = { requestId: record.requestId };
      answer(lookup ? deps.readThrough.read(route, request, lookup, context) : deps.txList.read(route, request, context), res, req, record);
    };
    // Rate limits (issue 9): a request the memory tier cannot answer pays the rest of a miss first.
    const charge = record.limit?.chargeMiss?.(record.headers);
    if (charge === undefined) read();
    else if (charge instanceof Promise) charge.then((refusal) => (refusal ? refuse(refusal) : read()), () => read());
    else if (charge === null) read();
    else refuse(charge);

    function refuse(refusal: FailureReply): void {
      record.status = sendError(res, refusal, 'NONE', [...refusal.headers, ...record.headers]);
    }
  };

  function answer(reading: Promise<ReadResult>, res: ServerResponse, req: IncomingMessage, record: RequestRecord): void {
    reading.then(
      (result) => {
        record.cache = result.cacheStatus;
        if (result.cacheStatus !== 'BYPASS') record.cls = result.entry.cls;
        record.upstreamSeconds = result.upstreamSeconds;
        record.status = sendResult(req, res, result, now(), record.headers);
      },
      (error: unknown) => {
        record.cache = 'MISS';
        if (!(error instanceof UpstreamError)) {
          deps.logger.error({ err: error, route: route.id }, 'unexpected error while reading');
          record.status = sendError(res, internalError('proxy error'), 'MISS', record.headers);
          return;
        }
        record.upstreamError = error.kind;
        const failure = failureReply(error.kind, error.retryAfterMs);
        record.status = sendError(res, failure, 'MISS', [...failure.headers, ...record.headers]);
      },
    );
  }
}
