/**
 * Route families for reports: which family (and change class, from PLAN-15's table) a request
 * belongs to. The ONE place the bench and the oracle classify requests: when branch B's table
 * lands with other ids, adjust the ids here.
 */
export type ChangeClass = 'immutable' | 'etag:chain_tip' | 'etag:mempool' | 'etag:transaction' | 'etag:block' | 'etag:principal' | 'etag:principal_mempool' | 'tip-keyed' | 'never' | 'tracker' | 'other';

interface FamilyRule {
  id: string;
  cls: ChangeClass;
  method?: 'GET' | 'POST';
  path: RegExp;
  /** Extra test on the query (raw, without `?`). */
  query?: (q: URLSearchParams) => boolean;
}

const P = '[^/]+';
const RULES: FamilyRule[] = [
  { id: 'status', cls: 'tracker', path: /^\/extended\/?$/ },
  { id: 'tx-raw', cls: 'immutable', path: new RegExp(`^/extended/v1/tx/${P}/raw$`) },
  { id: 'mempool', cls: 'etag:mempool', path: /^\/extended\/v1\/tx\/mempool$/, query: (q) => !q.has('address') },
  { id: 'mempool-address', cls: 'etag:mempool', path: /^\/extended\/v1\/tx\/mempool$/ },
  { id: 'principal-mempool', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/v3/principals/${P}/mempool/transactions$`) },
  { id: 'v3-mempool', cls: 'etag:mempool', path: /^\/extended\/v3\/mempool\/transactions$/ },
  { id: 'tx-list', cls: 'etag:chain_tip', path: /^\/extended\/v1\/tx\/?$/ },
  { id: 'tx', cls: 'etag:transaction', path: new RegExp(`^/extended/(v1/tx|v3/transactions)/${P}$`) },
  { id: 'block-list', cls: 'etag:chain_tip', path: /^\/extended\/v2\/blocks\/?$/ },
  { id: 'block-times', cls: 'etag:chain_tip', path: /^\/extended\/v2\/blocks\/average-times$|^\/extended\/v1\/info\/network_block_times$/ },
  { id: 'block-txs', cls: 'etag:block', path: new RegExp(`^/extended/v[23]/blocks/${P}/transactions$`) },
  { id: 'block', cls: 'etag:block', path: new RegExp(`^/extended/v2/blocks/${P}$`) },
  { id: 'burn-block', cls: 'tracker', path: new RegExp(`^/extended/v1/block/by_burn_block_height/${P}$`) },
  { id: 'burn-blocks', cls: 'etag:chain_tip', path: /^\/extended\/v2\/burn-blocks/ },
  { id: 'principal-nonces', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/(v1/address|v3/principals)/${P}/nonces$`) },
  { id: 'principal-stx-mempool', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/(v1/address/${P}/(stx|balances)|v3/principals/${P}/balances/stx)$`) },
  { id: 'principal-stx-mempool', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/v2/addresses/${P}/balances/stx$`), query: (q) => q.get('include_mempool') === 'true' },
  { id: 'principal-balances', cls: 'etag:principal', path: new RegExp(`^/extended/v2/addresses/${P}/balances/(stx|ft)$`) },
  { id: 'principal-txs', cls: 'etag:principal', path: new RegExp(`^/extended/(v1/address/${P}/transactions(_with_transfers)?|v2/addresses/${P}/transactions|v3/principals/${P}/transactions)$`) },
  { id: 'nft-holdings', cls: 'etag:chain_tip', path: /^\/extended\/v1\/tokens\/nft\/holdings$/ },
  { id: 'bns', cls: 'etag:chain_tip', path: /^\/v1\/(names|addresses)\// },
  { id: 'pox-cycles', cls: 'etag:chain_tip', path: /^\/extended\/v2\/pox\/cycles/ },
  { id: 'contract-status', cls: 'etag:chain_tip', path: /^\/extended\/v2\/smart-contracts\/status$/ },
  { id: 'broadcast', cls: 'never', method: 'POST', path: /^\/v2\/transactions$/ },
  { id: 'contract-meta', cls: 'immutable', method: 'GET', path: /^\/v2\/contracts\/(interface|source)\// },
  { id: 'call-read-tip', cls: 'immutable', method: 'POST', path: /^\/v2\/contracts\/call-read\//, query: (q) => q.has('tip') },
  { id: 'call-read', cls: 'tip-keyed', method: 'POST', path: /^\/v2\/contracts\/call-read\// },
  { id: 'map-entry', cls: 'tip-keyed', method: 'POST', path: /^\/v2\/map_entry\// },
  { id: 'data-var', cls: 'tip-keyed', method: 'GET', path: /^\/v2\/data_var\// },
  { id: 'accounts', cls: 'tip-keyed', path: /^\/v2\/accounts\// },
  { id: 'fees', cls: 'tip-keyed', path: /^\/v2\/fees\// },
  { id: 'node-info', cls: 'tip-keyed', path: /^\/v2\/(info|pox)$/ },
];

export interface Family {
  id: string;
  cls: ChangeClass;
}

export function familyOf(method: string, url: string): Family {
  const [path = '', query = ''] = url.split('?', 2);
  const q = new URLSearchParams(query);
  const m = method === 'HEAD' ? 'GET' : method;
  for (const rule of RULES) {
    if (rule.method && rule.method !== m) continue;
    if (!rule.path.test(path)) continue;
    if (rule.query && !rule.query(q)) continue;
    return { id: rule.id, cls: rule.cls };
  }
  return { id: 'other', cls: 'other' };
}
