/** Answers computed from the chain model: the routes whose bodies change as the chain moves. */
import { recordedJson } from '../fixtures.js';
import { legacyBlockJson, searchTxs } from './bodies.js';
import type { NakamotoBlock } from './model.js';
import { HASH_HEX, withHexPrefix } from './primitives.js';
import { errorBody, jsonReply, validationError, type Reply, type RequestContext } from './replies.js';

const HASH_PATTERN_ERROR = 'must match pattern "^(0x)?[a-fA-F0-9]{64}$"';
const BLOCK_PARAM_ERROR =
  'params/height_or_hash must be equal to constant, params/height_or_hash must match pattern "^(0x)?[a-fA-F0-9]{64}$", params/height_or_hash must be integer, params/height_or_hash must match a schema in anyOf';
/** Paging defaults that apply when `limit` is absent or 0 (§2, `getPagingQueryLimit`). */
const DEFAULT_LIMIT = 20;

/** with_transfers carries the transaction's ETag, keyed by the tx alone (§4.13). */
export const transferEtag = ({ chain, params: [, txId = ''] }: RequestContext) => chain.txEtag(txId);

export function statusReply({ chain }: RequestContext): Reply {
  const tip = chain.reportedTip();
  const chain_tip = {
    block_height: tip.height,
    block_hash: tip.hash,
    index_block_hash: tip.index_block_hash,
    burn_block_height: tip.burn_block_height,
  };
  // Spreading the recorded body keeps server_version, status and the v8 pox_* fields in place.
  return jsonReply(200, JSON.stringify({ ...recordedJson('/extended'), chain_tip }), tip.index_block_hash);
}

export function blockReply({ chain, params: [param = ''] }: RequestContext): Reply {
  if (param === 'latest') return blockFound(chain.tipBlock(), true);
  if (HASH_HEX.test(param)) {
    // preValidation adds a missing 0x; the ETag lookup then matches index_block_hash only (§3).
    const hash = withHexPrefix(param).toLowerCase();
    const block = chain.blockByHash(hash);
    return block ? blockFound(block, block.index_block_hash === hash) : blockNotFound();
  }
  if (/^\d+$/.test(param)) {
    const block = chain.blockAtHeight(Number(param));
    return block ? blockFound(block, true) : blockNotFound();
  }
  // A negative integer passes the schema, then parseBlockParam throws a plain Error (§2).
  if (/^-\d+$/.test(param)) return jsonReply(500, errorBody(500, 'Invalid block height or hash'));
  return validationError(BLOCK_PARAM_ERROR);
}

export function blockFound(block: NakamotoBlock, withEtag: boolean): Reply {
  return jsonReply(200, JSON.stringify(block), withEtag ? `${block.index_block_hash}:true` : undefined);
}

export function blockNotFound(): Reply {
  return jsonReply(404, errorBody(404, 'Block not found'));
}

export function burnBlockReply({ chain, params: [param = ''] }: RequestContext): Reply {
  if (!/^-?\d+$/.test(param)) return validationError('params/burn_block_height must be integer');
  const burnHeight = Number(param);
  if (burnHeight < 0) return validationError('params/burn_block_height must be >= 0');
  const found = chain.highestAtBurnHeight(burnHeight);
  // Both answers carry the chain-tip ETag: the cache preHandler runs before the handler (§3).
  const etag = chain.tipBlock().index_block_hash;
  return found ? jsonReply(200, legacyBlockJson(found), etag) : jsonReply(404, errorBody(404, 'cannot find block by height'), etag);
}

/** Query params other than the default are ignored: the default body answers them all. */
export function txReply({ chain, params: [param = ''], query }: RequestContext): Reply {
  if (!HASH_HEX.test(param)) return validationError(`params/tx_id ${HASH_PATTERN_ERROR}`);
  const id = withHexPrefix(param);
  // The ETag preHandler runs before the redirect, so a 302 carries it too (§4.4).
  const etag = chain.txEtag(id);
  if (id !== param) {
    return { status: 302, body: '', location: `/extended/v1/tx/${id}${query ? `?${query}` : ''}`, etag };
  }
  const tx = chain.findTx(id);
  return tx ? jsonReply(200, JSON.stringify(tx.body), etag) : jsonReply(404, errorBody(404, 'could not find transaction by ID'));
}

export function txMultipleReply({ chain, query }: RequestContext): Reply {
  const ids = requestedTxIds(query);
  if (ids.length === 0) return validationError("querystring must have required property 'tx_id'");
  const invalid = ids.findIndex((id) => !HASH_HEX.test(id));
  if (invalid >= 0) return validationError(`querystring/tx_id/${invalid} ${HASH_PATTERN_ERROR}`);
  const etag = chain.mempoolEtag();
  // validateRequestHexInput runs in the handler, after the ETag was set (§4.6).
  if (ids.some((id) => !id.startsWith('0x'))) {
    return jsonReply(400, errorBody(400, 'Hex string is missing the "0x" prefix'), etag);
  }
  return jsonReply(200, searchTxs(chain, ids), etag);
}

/** Repeated `tx_id` params, or one comma list: preValidation splits only a single value (§4.6). */
export function requestedTxIds(query: string): string[] {
  const ids = new URLSearchParams(query).getAll('tx_id');
  const [only] = ids;
  return ids.length === 1 && only !== undefined ? only.split(',') : ids;
}

/** A resource without events answers an empty page, never 404 (§4.8, §4.9). */
/** `/extended/v1/tx/mempool`: the pending transactions, newest first, under the mempool ETag. */
export function mempoolListReply({ chain, query }: RequestContext): Reply {
  const params = new URLSearchParams(query);
  const limit = Number(params.get('limit')) || DEFAULT_LIMIT;
  const offset = Number(params.get('offset')) || 0;
  const address = params.get('address');
  const pending = chain
    .pendingTxs()
    .filter((tx) => !address || tx.sender_address === address)
    .reverse();
  const page = { limit, offset, total: pending.length, results: pending.slice(offset, offset + limit) };
  return jsonReply(200, JSON.stringify(page), chain.mempoolEtag());
}

/** `/extended/v2/blocks/average-times`: fixed figures (the fake's blocks carry no real times) under the tip ETag. */
export function averageTimesReply({ chain }: RequestContext): Reply {
  const times = { last_1h: 5, last_24h: 5, last_7d: 5, last_30d: 5 };
  return jsonReply(200, JSON.stringify(times), chain.tipBlock().index_block_hash);
}

export function emptyPage(listKey: 'events' | 'results'): (ctx: RequestContext) => Reply {
  return ({ chain, query }) => {
    const params = new URLSearchParams(query);
    const page = {
      limit: Number(params.get('limit')) || DEFAULT_LIMIT,
      offset: Number(params.get('offset')) || 0,
      [listKey]: [],
    };
    return jsonReply(200, JSON.stringify(page), chain.tipBlock().index_block_hash);
  };
}

/** A tx not related to the principal: 404 that still carries the tx's ETag when the tx exists (§3). */
export function unrelatedTransfer(ctx: RequestContext): Reply {
  return jsonReply(404, errorBody(404, 'No matching transaction found'), transferEtag(ctx));
}
