/**
 * The handler for one of the 13 read routes: validate, look up, answer. A fresh entry in
 * memory is written synchronously; anything else goes through the read-through.
 */
import type { NextFunction, Request, Response } from 'express';
import type { RouteSpec } from '../routes/route-spec.js';
import { validateRequest } from '../routes/validate.js';
import type { ReadThrough, ReadResult } from '../cache/read-through.js';
import type { TxListReader } from '../cache/tx-list.js';
import { UpstreamError } from '../upstream/errors.js';
import { badGateway, gatewayTimeout, serviceUnavailable } from '../errors.js';
import { sendError, sendHit, sendRedirect, sendResult } from './respond.js';
import type { RequestRecord } from './request-log.js';

export interface ReadHandlerDeps {
  readThrough: ReadThrough;
  txList: TxListReader;
  now?: () => number;
}

function rawQueryOf(url: string): string {
  const mark = url.indexOf('?');
  return mark < 0 ? '' : url.slice(mark + 1);
}

// Clients should come back soon: queues drain within seconds.
const OVERLOAD_RETRY_AFTER_SECONDS = '1';

function upstreamFailure(error: UpstreamError) {
  if (error.kind === 'timeout') return gatewayTimeout('The upstream API did not answer in time');
  if (error.kind === 'overloaded') return serviceUnavailable('The upstream API is overloaded; retry shortly');
  return badGateway('The upstream API is unavailable');
}

export type ReadHandler = (req: Request, res: Response, next: NextFunction, params: Record<string, string>) => void;

export function createReadHandler(route: RouteSpec, deps: ReadHandlerDeps): ReadHandler {
  const now = deps.now ?? Date.now;
  return (req, res, next, params) => {
    const record = res.locals as RequestRecord;
    record.route = route.id;
    const outcome = validateRequest(route, params, rawQueryOf(req.url));
    if (outcome.kind === 'error') {
      record.cache = 'BYPASS';
      record.status = sendError(res, outcome.error);
      return;
    }
    if (outcome.kind === 'redirect') {
      record.cache = 'BYPASS';
      record.status = sendRedirect(res, outcome.location);
      return;
    }
    const request = outcome.request;
    if (route.policy !== 'tx_multiple') {
      const hit = deps.readThrough.peekFresh(deps.readThrough.keyFor(route, request));
      if (hit) {
        record.cache = 'HIT';
        record.cls = hit.cls;
        if (req.headers['if-none-match'] === undefined) {
          sendHit(res, hit, now());
          record.status = hit.status;
        } else {
          record.status = sendResult(req, res, { cacheStatus: 'HIT', entry: hit }, now());
        }
        return;
      }
    }
    const reading: Promise<ReadResult> =
      route.policy === 'tx_multiple' ? deps.txList.read(route, request) : deps.readThrough.read(route, request);
    reading.then(
      (result) => {
        record.cache = result.cacheStatus;
        record.cls = result.cacheStatus === 'BYPASS' ? undefined : result.entry.cls;
        record.upstreamSeconds = result.upstreamSeconds;
        record.status = sendResult(req, res, result, now());
      },
      (error: unknown) => {
        if (!(error instanceof UpstreamError)) return next(error);
        record.cache = 'MISS';
        record.upstreamError = error.kind;
        const retryAfter = error.kind === 'overloaded' ? ['retry-after', OVERLOAD_RETRY_AFTER_SECONDS] : [];
        record.status = sendError(res, upstreamFailure(error), 'MISS', retryAfter);
      },
    );
  };
}
