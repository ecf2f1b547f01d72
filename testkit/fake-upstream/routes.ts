/** The route table: which of the upstream's routes the fake serves, and from where. */
import {
  averageTimesReply,
  blockReply,
  burnBlockReply,
  emptyPage,
  mempoolListReply,
  statusReply,
  transferEtag,
  txMultipleReply,
  txReply,
  unrelatedTransfer,
} from './chain-replies.js';
import { RECORDED } from '../fixtures.js';
import type { Reply, RequestContext } from './replies.js';

export interface RouteSpec {
  pattern: RegExp;
  /** "Dep.? yes" in §4: the answers carry the Warning header. */
  deprecated?: boolean;
  /** Answers from the chain model; routes without it replay the recordings. */
  handle?: (ctx: RequestContext) => Reply;
  /** The current ETag of a replayed answer whose recording carried `recorded`. */
  etag?: (ctx: RequestContext, recorded: string) => string | undefined;
  /** The path whose recordings answer for a resource that was never recorded. */
  standIn?: (ctx: RequestContext) => string;
  /** The answer when no recording fits. */
  fallback?: (ctx: RequestContext) => Reply;
}

export const tipEtag = ({ chain }: RequestContext) => chain.tipBlock().index_block_hash;
export const mempoolEtag = ({ chain }: RequestContext) => chain.mempoolEtag();
export const principalEtag = ({ chain, params: [principal = ''] }: RequestContext, recorded: string) => chain.principalEtag(recorded, false, principal);
export const principalMempoolEtag = ({ chain, params: [principal = ''] }: RequestContext, recorded: string) => chain.principalEtag(recorded, true, principal);
/** An unrecorded principal answers as one without any activity does (200, zeros, no ETag). */
const asInactivePrincipal = ({ path, params: [principal = ''] }: RequestContext) => path.replace(`/${principal}/`, `/${RECORDED.principalWithoutTxs}/`);

/** Static segments first: find-my-way prefers them over parametric ones (§1.1). */
export const ROUTES: RouteSpec[] = [
  { pattern: /^\/extended$/, handle: statusReply },
  { pattern: /^\/extended\/v1\/tx\/multiple$/, handle: txMultipleReply },
  { pattern: /^\/extended\/v1\/tx\/mempool\/stats$/, etag: mempoolEtag },
  { pattern: /^\/extended\/v1\/tx\/mempool$/, deprecated: true, handle: mempoolListReply },
  { pattern: /^\/extended\/v2\/blocks\/average-times$/, handle: averageTimesReply },
  { pattern: /^\/extended\/v2\/mempool\/fees$/, etag: mempoolEtag },
  {
    pattern: /^\/extended\/v1\/tx\/events$/,
    deprecated: true,
    etag: tipEtag,
    fallback: emptyPage('events'),
  },
  { pattern: /^\/extended\/v1\/tx\/([^/]+)$/, deprecated: true, handle: txReply },
  { pattern: /^\/extended\/v2\/blocks\/([^/]+)$/, handle: blockReply },
  {
    pattern: /^\/extended\/v1\/block\/by_burn_block_height\/([^/]+)$/,
    deprecated: true,
    handle: burnBlockReply,
  },
  {
    pattern: /^\/extended\/v1\/contract\/([^/]+)\/events$/,
    deprecated: true,
    etag: tipEtag,
    fallback: emptyPage('results'),
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/(?:stx|balances)$/,
    deprecated: true,
    etag: principalMempoolEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/transactions$/,
    deprecated: true,
    etag: principalEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v2\/addresses\/([^/]+)\/transactions$/,
    deprecated: true,
    etag: principalEtag,
    standIn: asInactivePrincipal,
  },
  {
    pattern: /^\/extended\/v1\/address\/([^/]+)\/([^/]+)\/with_transfers$/,
    deprecated: true,
    etag: transferEtag,
    fallback: unrelatedTransfer,
  },
];
