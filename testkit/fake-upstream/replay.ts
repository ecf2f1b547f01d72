/** Answers replayed from the recordings, with ETags recomputed for the chain as it is now. */
import { findRecording, recordingsForPath, splitUrl, type Recording } from '../fixtures.js';
import { unquote } from './primitives.js';
import { relocateMovedTxs } from './relocate.js';
import { routeNotFound, type Reply, type RequestContext } from './replies.js';
import type { RouteSpec } from './routes.js';

/** Query parameters that name a resource (tx/events); the others only page, filter or are ignored. */
const RESOURCE_PARAMS = new Set(['tx_id', 'address']);

/** Replays a recording of the request (or of its stand-in), with the ETag recomputed for now. */
export function replayReply(ctx: RequestContext, route: RouteSpec): Reply {
  const rec = lookupRecording(ctx.path, ctx.query) ?? (route.standIn ? lookupRecording(route.standIn(ctx), ctx.query) : undefined);
  if (!rec) return route.fallback?.(ctx) ?? routeNotFound(ctx.method, ctx.url);
  const recordedEtag = rec.headers.etag === undefined ? undefined : unquote(rec.headers.etag);
  return {
    status: rec.status,
    body: relocateMovedTxs(rec.body, ctx.chain),
    contentType: rec.headers['content-type'],
    location: rec.headers.location,
    etag: recordedEtag === undefined ? undefined : route.etag?.(ctx, recordedEtag),
  };
}

export function lookupRecording(urlPath: string, query: string): Recording | undefined {
  return findRecording(query ? `${urlPath}?${query}` : urlPath) ?? closestRecording(urlPath, query);
}

/**
 * For an unrecorded query variant: the 200 recording of the same path naming the same resource
 * (same tx_id/address) that shares the most query pairs, then the shortest (the default query).
 */
export function closestRecording(urlPath: string, query: string): Recording | undefined {
  const wanted = new Set(query.split('&'));
  const identity = resourceParams(query);
  let best: { rec: Recording; shared: number } | undefined;
  for (const rec of recordingsForPath(urlPath)) {
    const recQuery = splitUrl(rec.path).query;
    if (rec.status !== 200 || resourceParams(recQuery) !== identity) continue;
    const shared = recQuery.split('&').filter((pair) => wanted.has(pair)).length;
    const better = !best || shared > best.shared || (shared === best.shared && rec.path.length < best.rec.path.length);
    if (better) best = { rec, shared };
  }
  return best?.rec;
}

export function resourceParams(query: string): string {
  return query
    .split('&')
    .filter((pair) => RESOURCE_PARAMS.has(pair.split('=')[0] ?? ''))
    .sort()
    .join('&');
}
