/** Which answer a request gets: the node's own endpoints, a route of the table, or the upstream's 404. */
import type { IncomingMessage } from 'node:http';
import { splitUrl } from '../fixtures.js';
import type { FakeChain } from './chain.js';
import { sha256Hex, trimSlash } from './primitives.js';
import { replayReply } from './replay.js';
import { routeNotFound, type Reply, type RequestContext } from './replies.js';
import { ROUTES } from './routes.js';

export interface Dispatched {
  reply: Reply;
  /** The route's answers carry the deprecation Warning header. */
  deprecated?: boolean;
}

/** `url`: the request to answer, when it is not the one received (a wrong-resource fault). */
export async function dispatch(chain: FakeChain, req: IncomingMessage, url = req.url ?? '/'): Promise<Dispatched> {
  const method = req.method ?? 'GET';
  const { path, query } = splitUrl(url);
  const ctx: RequestContext = { chain, method, url, path: trimSlash(path), query, params: [] };
  if (method === 'POST' && ctx.path === '/v2/transactions') return { reply: broadcastReply(await readBody(req)) };
  if (method !== 'GET' && method !== 'HEAD') return { reply: routeNotFound(method, url) };
  if (ctx.path === '/v2/info') return { reply: coreInfoReply(ctx) };
  for (const route of ROUTES) {
    const match = route.pattern.exec(ctx.path);
    if (!match) continue;
    const routed = { ...ctx, params: match.slice(1).map((p) => p ?? '') };
    const reply = route.handle ? route.handle(routed) : replayReply(routed, route);
    return { reply, deprecated: route.deprecated };
  }
  return { reply: routeNotFound(method, url) };
}

/** `/v2/*` is proxied to the stacks-core node upstream (§5): a small, tip-aware stand-in. */
function coreInfoReply({ chain }: RequestContext): Reply {
  const tip = chain.tipBlock();
  const info = {
    peer_version: 4207599116,
    // The node's burn view: the burn chain's tip, not the tip block's anchor (§5).
    burn_block_height: chain.burnTipHeight(),
    server_version: 'stacks-node fake',
    network_id: 2147483648,
    parent_network_id: 3669344250,
    stacks_tip_height: tip.height,
    stacks_tip: tip.hash.slice(2),
    is_fully_synced: true,
  };
  return { status: 200, body: JSON.stringify(info), contentType: 'application/json' };
}

function broadcastReply(rawTx: Buffer): Reply {
  return { status: 200, body: JSON.stringify(`0x${sha256Hex(rawTx)}`), contentType: 'application/json' };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
