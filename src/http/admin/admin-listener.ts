/**
 * The admin listener's requests (ADMIN_PORT on ADMIN_HOST, loopback by default): /health,
 * /ready with its details, /metrics, the status page (/ and /status.json, status-endpoints.ts;
 * no token, like /metrics) and the admin API (admin-api.ts). Anything else gets the
 * upstream's own 404; nothing here reaches the upstream or the cache's read path.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { badUrl, routeNotFound } from '../../errors.js';
import { createOwnEndpoints, type OwnEndpointDeps } from '../own-endpoints.js';
import { requestIdOf } from '../request-log.js';
import { decideTarget } from '../request-target.js';
import { sendError } from '../respond.js';
import { createAdminApi, type AdminApiDeps } from './admin-api.js';
import { createStatusEndpoints, type StatusEndpointDeps } from './status-endpoints.js';

export function createAdminListener(deps: OwnEndpointDeps & AdminApiDeps & StatusEndpointDeps): RequestListener {
  const answerOwnEndpoint = createOwnEndpoints(deps, { details: true, metrics: true });
  const answerStatus = createStatusEndpoints(deps);
  const answerAdminApi = createAdminApi(deps);
  return (req: IncomingMessage, res: ServerResponse): void => {
    const target = decideTarget(req.url ?? '');
    if (target.kind === 'refused') {
      sendError(res, badUrl(target.path), 'NONE', ['x-request-id', requestIdOf(req)]);
      return;
    }
    if (answerOwnEndpoint(req, res, target.path)) return;
    if (answerStatus(req, res, target.path)) return;
    if (answerAdminApi(req, res, target.path, target.url)) return;
    sendError(res, routeNotFound(req.method ?? 'GET', target.url), 'NONE', ['x-request-id', requestIdOf(req)]);
  };
}
