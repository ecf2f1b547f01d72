/**
 * The admin API on the admin listener: GET /admin/cache (stats) and POST /admin/purge. Every
 * call needs `Authorization: Bearer <ADMIN_TOKEN>` (401 otherwise); without a configured
 * token the API is off and its paths are unknown (404), as on the public port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, methodNotAllowed, routeNotFound, unauthorized, unavailable, type ErrorReply } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { routeKey } from '../../cache/key.js';
import type { CacheEntry } from '../../cache/entry.js';
import type { PurgeSelector } from '../../cache/purge.js';
import type { CoalescedOutcome } from '../../cache/purge-coalescer.js';
import { bearerTokenCheck } from './admin-token.js';
import { parsePurgeRequest } from './purge-request.js';
import { requestIdOf } from '../request-log.js';
import { sendError } from '../respond.js';

/** Purge bodies are a few hundred bytes; anything much larger is not one. */
export const MAX_PURGE_BODY_BYTES = 16 * 1024;

export interface AdminApiDeps {
  /** null: the admin API is off. */
  token: string | null;
  keyPrefix: string;
  logger: Logger;
  stats: () => Promise<Record<string, unknown>>;
  /** Resolves once the purge (or the one it was coalesced into) has been carried out here. */
  purge: (selector: PurgeSelector) => Promise<CoalescedOutcome>;
  /** A cached entry by key (memory, then Redis), to find a block's other identifiers. */
  lookup: (key: string) => Promise<CacheEntry | undefined>;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** The admin API's paths (the primary of worker mode sends their state-changing calls to every worker). */
export const ADMIN_API_PATHS: ReadonlySet<string> = new Set(['/admin/cache', '/admin/purge']);

function sendJson(res: ServerResponse, status: number, value: unknown, requestId: string): void {
  const body = JSON.stringify(value);
  res.writeHead(status, ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)), 'cache-control', 'no-store', 'x-request-id', requestId]);
  res.end(body);
}

export class BodyError extends Error {}

/** The request body as text, refused past MAX_PURGE_BODY_BYTES. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PURGE_BODY_BYTES) {
        reject(new BodyError(`body must not be larger than ${MAX_PURGE_BODY_BYTES} bytes`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Identifiers in a cached block body (v2 /blocks and v1 by_burn_block_height answers share these fields). */
interface BlockFields {
  height?: unknown;
  hash?: unknown;
  index_block_hash?: unknown;
  burn_block_height?: unknown;
}

function blockFields(entry: CacheEntry | undefined): BlockFields | undefined {
  if (!entry || entry.status !== 200) return undefined;
  try {
    const body: unknown = JSON.parse(entry.body.toString('utf8'));
    return body !== null && typeof body === 'object' ? (body as BlockFields) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A block by one identifier, widened to every identifier its cached entry names: its height,
 * hash and index block hash on /extended/v2/blocks/{ref}, `latest` when that entry is this
 * block, and its burn block height (by_burn_block_height).
 */
async function blockSelector(ref: string, deps: AdminApiDeps): Promise<PurgeSelector> {
  const blockKey = (r: string) => routeKey(deps.keyPrefix, 'block', `/extended/v2/blocks/${r}`);
  const refs = new Set([ref]);
  const burnHeights = new Set<number>();
  const fields = blockFields(await deps.lookup(blockKey(ref)));
  if (fields) {
    if (typeof fields.height === 'number') refs.add(String(fields.height));
    for (const hash of [fields.hash, fields.index_block_hash]) if (typeof hash === 'string') refs.add(hash.toLowerCase());
    if (typeof fields.burn_block_height === 'number') burnHeights.add(fields.burn_block_height);
  }
  const latest = blockFields(await deps.lookup(blockKey('latest')));
  if (latest && typeof latest.height === 'number' && refs.has(String(latest.height))) refs.add('latest');
  return { kind: 'block', refs: [...refs], burnHeights: [...burnHeights] };
}

export function createAdminApi(deps: AdminApiDeps) {
  const authorized = deps.token === null ? undefined : bearerTokenCheck(deps.token);

  const purge = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> => {
    const type = req.headers['content-type'];
    if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type)) {
      sendError(res, badRequest('content-type must be application/json'), 'NONE', ['x-request-id', requestId]);
      req.resume();
      return;
    }
    let body: string;
    try {
      body = await readBody(req);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      sendError(res, badRequest(error.message), 'NONE', ['x-request-id', requestId, 'connection', 'close']);
      return;
    }
    const request = parsePurgeRequest(body, deps.keyPrefix);
    if (request.kind === 'invalid') {
      sendError(res, badRequest(request.message), 'NONE', ['x-request-id', requestId]);
      return;
    }
    const selector = request.kind === 'block' ? await blockSelector(request.ref, deps) : request.selector;
    const outcome = await deps.purge(selector);
    deps.logger.info(
      {
        reqId: requestId,
        purge: selector,
        applied: outcome.applied,
        coalesced: outcome.coalesced,
        memory: outcome.memory,
        redis: outcome.redis,
        redisError: outcome.redisError,
      },
      'admin purge',
    );
    if (outcome.redisError !== undefined) {
      const message = `purged ${outcome.memory} memory entries, but Redis failed: ${outcome.redisError}`;
      sendError(res, unavailable(message), 'NONE', ['x-request-id', requestId]);
      return;
    }
    sendJson(res, 200, { purged: { memory: outcome.memory, redis: outcome.redis }, matched: outcome.applied, coalesced: outcome.coalesced }, requestId);
  };

  /** `path` is the decided path; returns false when it is not an admin API path. */
  return (req: IncomingMessage, res: ServerResponse, path: string, url: string): boolean => {
    if (!ADMIN_API_PATHS.has(path)) return false;
    const requestId = requestIdOf(req);
    const refuse = (error: ErrorReply, extra: string[] = []) => sendError(res, error, 'NONE', ['x-request-id', requestId, ...extra]);
    const method = req.method ?? 'GET';
    if (!authorized) {
      refuse(routeNotFound(method, url));
      return true;
    }
    if (!authorized(req.headers.authorization)) {
      refuse(unauthorized('the admin API needs Authorization: Bearer <ADMIN_TOKEN>'), ['www-authenticate', 'Bearer']);
      return true;
    }
    const allowed = path === '/admin/purge' ? 'POST' : 'GET';
    if (method !== allowed && !(allowed === 'GET' && method === 'HEAD')) {
      refuse(methodNotAllowed(method, path, allowed === 'GET' ? 'GET and HEAD' : 'POST'), ['allow', allowed === 'GET' ? 'GET, HEAD' : 'POST']);
      return true;
    }
    const work = path === '/admin/purge' ? purge(req, res, requestId) : deps.stats().then((stats) => sendJson(res, 200, stats, requestId));
    work.catch((error: unknown) => {
      deps.logger.error({ err: error, path }, 'admin request failed');
      if (!res.headersSent) refuse(unavailable('the admin request failed'));
    });
    return true;
  };
}
