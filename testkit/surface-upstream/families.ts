/**
 * Route families for reports: which family (and change class, from PLAN-15's table) a request
 * belongs to. The ONE place the bench and the oracle classify requests: when branch B's table
 * changes its ids, adjust them here.
 */
export type ChangeClass =
  | 'immutable'
  | 'etag:chain_tip'
  | 'etag:mempool'
  | 'etag:transaction'
  | 'etag:block'
  | 'etag:principal'
  | 'etag:principal_mempool'
  | 'tip-keyed'
  | 'never'
  | 'other';

interface FamilyRule {
  id: string;
  cls: ChangeClass;
  method?: 'GET' | 'POST';
  path: RegExp;
}

const P = '[^/]+';
/**
 * Ids: branch B's surface families (src/surface/families.ts on i15-surface) and, for the 13
 * routes, their route ids (src/routes/route-table.ts). First match wins.
 */
const RULES: FamilyRule[] = [
  { id: 'status', cls: 'etag:chain_tip', path: /^\/extended\/?$/ },
  // The 13 routes.
  { id: 'address_stx_balance', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/v1/address/${P}/stx$`) },
  { id: 'address_balances', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/v1/address/${P}/balances$`) },
  { id: 'address_transactions', cls: 'etag:principal', path: new RegExp(`^/extended/v1/address/${P}/transactions$`) },
  { id: 'address_transactions_v2', cls: 'etag:principal', path: new RegExp(`^/extended/v2/addresses/${P}/transactions$`) },
  { id: 'tx_with_transfers', cls: 'etag:transaction', path: new RegExp(`^/extended/v1/address/${P}/${P}/with_transfers$`) },
  { id: 'block_by_burn_height', cls: 'etag:chain_tip', path: new RegExp(`^/extended/v1/block/by_burn_block_height/${P}$`) },
  { id: 'mempool_fees', cls: 'etag:mempool', path: /^\/extended\/v2\/mempool\/fees$/ },
  { id: 'mempool_stats', cls: 'etag:mempool', path: /^\/extended\/v1\/tx\/mempool\/stats$/ },
  { id: 'tx_multiple', cls: 'etag:mempool', path: /^\/extended\/v1\/tx\/multiple$/ },
  { id: 'tx_events', cls: 'etag:chain_tip', path: /^\/extended\/v1\/tx\/events$/ },
  { id: 'contract_events', cls: 'etag:chain_tip', path: new RegExp(`^/extended/v1/contract/${P}/events$`) },
  // The wider surface.
  { id: 'mempool', cls: 'etag:mempool', path: /^\/extended\/(v1\/tx\/mempool|v3\/mempool\/transactions)$/ },
  { id: 'tx_raw', cls: 'immutable', path: new RegExp(`^/extended/v1/tx/${P}/raw$`) },
  { id: 'tx_lists', cls: 'etag:chain_tip', path: /^\/extended\/(v1\/tx\/?|v3\/transactions\/?)$/ },
  { id: 'tx_by_id', cls: 'etag:transaction', path: new RegExp(`^/extended/v1/tx/${P}$`) },
  { id: 'transaction_detail', cls: 'etag:transaction', path: new RegExp(`^/extended/v3/transactions/${P}(/events)?$`) },
  { id: 'blocks', cls: 'etag:chain_tip', path: /^\/extended\/v2\/blocks\/?$|^\/extended\/v2\/blocks\/average-times$/ },
  { id: 'block_transactions', cls: 'etag:block', path: new RegExp(`^/extended/v[23]/blocks/${P}/transactions$`) },
  { id: 'block', cls: 'etag:block', path: new RegExp(`^/extended/v2/blocks/${P}$`) },
  { id: 'burn_blocks', cls: 'etag:chain_tip', path: /^\/extended\/v2\/burn-blocks/ },
  { id: 'address_nonces', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/(v1/address|v3/principals)/${P}/nonces$`) },
  { id: 'address_mempool', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/(v1/address/${P}/mempool|v3/principals/${P}/mempool/transactions)$`) },
  { id: 'balances_stx_pending', cls: 'etag:principal_mempool', path: new RegExp(`^/extended/v3/principals/${P}/balances/stx$`) },
  { id: 'balances_stx', cls: 'etag:principal', path: new RegExp(`^/extended/v2/addresses/${P}/balances/stx$`) },
  { id: 'balances_ft', cls: 'etag:principal', path: new RegExp(`^/extended/(v2/addresses/${P}/balances/ft|v3/principals/${P}/balances/(ft|nft))`) },
  {
    id: 'principal_history',
    cls: 'etag:principal',
    path: new RegExp(`^/extended/(v1/address/${P}/(transactions_with_transfers|assets|stx_inbound)|v3/principals/${P}/(transactions|balance-changes))$`),
  },
  { id: 'nft_holdings', cls: 'etag:chain_tip', path: /^\/extended\/v1\/tokens\/nft\/holdings$/ },
  { id: 'bns', cls: 'etag:chain_tip', path: /^\/v1\/(names|namespaces|addresses)\/|^\/v2\/prices\// },
  { id: 'network_block_times', cls: 'etag:chain_tip', path: /^\/extended\/v1\/info\/network_block_times?/ },
  { id: 'pox_cycles', cls: 'etag:chain_tip', path: /^\/extended\/v2\/pox\/cycles/ },
  { id: 'contract_info', cls: 'etag:chain_tip', path: new RegExp(`^/extended/v1/contract/(${P}|by_trait)$`) },
  { id: 'smart_contracts', cls: 'etag:chain_tip', path: /^\/extended\/v2\/smart-contracts\// },
  { id: 'broadcast', cls: 'never', method: 'POST', path: /^\/v2\/transactions$/ },
  { id: 'contract_interface', cls: 'immutable', method: 'GET', path: /^\/v2\/contracts\/interface\// },
  { id: 'contract_source', cls: 'immutable', method: 'GET', path: /^\/v2\/contracts\/source\// },
  { id: 'call_read', cls: 'tip-keyed', method: 'POST', path: /^\/v2\/contracts\/call-read\// },
  { id: 'map_entry', cls: 'tip-keyed', method: 'POST', path: /^\/v2\/map_entry\// },
  { id: 'data_var', cls: 'tip-keyed', method: 'GET', path: /^\/v2\/data_var\// },
  { id: 'v2_accounts', cls: 'tip-keyed', path: /^\/v2\/accounts\// },
  { id: 'fee_transfer', cls: 'tip-keyed', path: /^\/v2\/fees\/transfer$/ },
  { id: 'fee_estimate', cls: 'tip-keyed', method: 'POST', path: /^\/v2\/fees\/transaction$/ },
  { id: 'v2_info', cls: 'tip-keyed', path: /^\/v2\/info$/ },
  { id: 'v2_pox', cls: 'tip-keyed', path: /^\/v2\/pox$/ },
];

export interface Family {
  id: string;
  cls: ChangeClass;
}

export function familyOf(method: string, url: string): Family {
  const [path = ''] = url.split('?', 1);
  const m = method === 'HEAD' ? 'GET' : method;
  for (const rule of RULES) {
    if (rule.method && rule.method !== m) continue;
    if (!rule.path.test(path)) continue;
    return { id: rule.id, cls: rule.cls };
  }
  return { id: 'other', cls: 'other' };
}
