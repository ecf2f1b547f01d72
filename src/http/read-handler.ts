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
import { failureReply, internalError } from '../errors.js';
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
    let reading: Promise<ReadResult>;
    if (route.reader === 'single') {
      const lookup = deps.readThrough.lookup(deps.readThrough.keyFor(route, request));
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
      reading = deps.readThrough.read(route, request, lookup, { requestId: record.requestId });
    } else {
      reading = deps.txList.read(route, request, { requestId: record.requestId });
    }
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
  };
}
