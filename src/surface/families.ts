/**
 * The upstream's public read surface beyond the 13 cached routes (issue 15), as one table of
 * route families: which routes each holds, how its answers change (its change class) and why.
 * Everything here is data and pure lookups; the table "The wider read surface" of docs/caching-and-freshness.md is this
 * table in prose, and test/unit/surface-families.test.ts checks that every upstream GET route is
 * one of the 13, in exactly one family, or named below as passed through.
 *
 * Change classes (shared/spec/read-surface.md §1.4 for the ETag kinds, §2.3 for node RPC):
 * - `immutable`: final, but only with evidence (see `evidence`); until then like `tip`.
 * - `etag:<kind>`: the upstream sends a strong ETag of that kind; entries are revalidated with
 *   If-None-Match once their class (tip or mempool) expires.
 * - `tip`: no ETag (node RPC sends `no-store`); keyed by the tip, refetched when it moves.
 * - `never`: not cached, ever (a broadcast, a faucet): the passthrough's, untouched.
 */
import type { FreshnessClass } from '../cache/entry.js';
import type { MovesWith } from '../chain/activity-view.js';

export type ChangeClass =
  'immutable' | 'etag:chain_tip' | 'etag:mempool' | 'etag:transaction' | 'etag:block' | 'etag:principal' | 'etag:principal_mempool' | 'tip' | 'never';

/**
 * How an answer of a family becomes final:
 * - `raw_tx`: the raw bytes hash (SHA-512/256) to the transaction id the path names;
 * - `deploy_tx`: the contract's deploy transaction is final (checked through the 13-route tx read);
 * - `pinned_tip`: the request pins `?tip=<index_block_hash>` of a final canonical block
 *   (checked through the 13-route block read).
 */
export type Evidence = 'raw_tx' | 'deploy_tx' | 'pinned_tip';

export type SurfaceMethod = 'GET' | 'POST';

export interface Family {
  /** Bounded, snake_case: a metric label and the key's family part. */
  id: string;
  method: SurfaceMethod;
  /** Route templates as the upstream's router reads them (`:name` a parameter). */
  routes: readonly string[];
  change: ChangeClass;
  evidence?: Evidence;
  /**
   * Where the principal an entry is about comes from (entries get `principal` set). A query
   * parameter names it only on the routes under `under` when given: another route of the family
   * may ignore the parameter (the upstream ignores unknown query parameters).
   */
  principal?: { param: string } | { query: string; under?: string };
  /**
   * `transactions`: the answer about the principal moves only with its transactions, mined or
   * pending (never with PoX unlocks or matured rewards), so learning survives a burn block for it
   * (chain/activity.ts; entries get `movesWith` set). Narrower ones (chain/activity-view.ts): only
   * with its token events, only with what it sends.
   */
  movesWith?: MovesWith;
  /**
   * An STX balance (with its lock): it moves with burn blocks only through a PoX unlock, which
   * needs STX locked. An answer showing none locked (locked 0, unlock height 0) moves only with
   * the principal's transactions (a lock is a transaction naming it: stack-stx, delegate-stack-stx,
   * their stx_lock event), so its entry gets `movesWith: 'transactions'` (admit-surface.ts).
   */
  movesWithWhenUnlocked?: true;
  /** A 404 is stored briefly with this class (a later block can create the thing); absent: never stored. */
  notFound?: Exclude<FreshnessClass, 'final'>;
  /**
   * Answers that also move with burn blocks alone (/v2/info, /v2/pox, burn blocks, PoX cycles,
   * burnchain rewards): the key holds the burn height too, so a burn block is a new key. (The
   * upstream's chain_tip ETag misses burn-block-only changes: read-surface §1.4, #2664.)
   */
  burnKeyed?: boolean;
  /**
   * Answers that can change without a new tip because the upstream reads its mempool for them
   * (search finds a pending transaction): stored as `mempool` class whatever the change class
   * says of their key, so no answer outlives the mempool TTL, a broadcast, or a mempool change
   * the watcher saw (policy rules (b) and (d)). ETag kinds `mempool` and `principal_mempool` are
   * mempool class already.
   */
  mempoolDependent?: true;
  /** With this query parameter present the request belongs to another family (v2 balances/stx?include_mempool). */
  variant?: { query: string; family: string };
  /** One line: why this class (that table's last column). */
  why: string;
}

const family = (f: Family): Family => f;

/** Every family of the surface, in that table's order. */
export const FAMILIES: readonly Family[] = [
  // --- The upstream's own API, by ETag kind ---
  family({
    id: 'status',
    method: 'GET',
    routes: ['/extended', '/extended/v1/status'],
    change: 'etag:chain_tip',
    why: 'the status names the chain tip: chain_tip ETag, new every block',
  }),
  family({
    id: 'blocks',
    method: 'GET',
    routes: [
      '/extended/v2/blocks/',
      '/extended/v2/blocks/average-times',
      '/extended/v1/block/',
      '/extended/v1/block/by_height/:height',
      '/extended/v1/block/:hash',
      '/extended/v1/block/by_burn_block_hash/:burn_block_hash',
    ],
    change: 'etag:chain_tip',
    notFound: 'tip',
    why: 'block lists and v1 block lookups carry the chain_tip ETag; a missing block may land at the next one',
  }),
  family({
    id: 'block_detail',
    method: 'GET',
    routes: [
      '/extended/v2/blocks/by-block-time/:timestamp',
      '/extended/v2/blocks/:height_or_hash/signer-signatures',
      '/extended/v2/block-tenures/:tenure_height/blocks',
    ],
    change: 'etag:block',
    notFound: 'tip',
    why: 'the block ETag changes only on a reorg or when a block fills that height',
  }),
  family({
    id: 'block_transactions',
    method: 'GET',
    routes: ['/extended/v2/blocks/:height_or_hash/transactions', '/extended/v3/blocks/:height_or_hash/transactions'],
    change: 'etag:block',
    notFound: 'tip',
    why: "a block's transactions change with its canonical flag only: block ETag",
  }),
  family({
    id: 'microblocks',
    method: 'GET',
    routes: ['/extended/v1/microblock/', '/extended/v1/microblock/:hash', '/extended/v1/microblock/unanchored/txs'],
    change: 'etag:chain_tip',
    why: 'deprecated (no microblocks since Nakamoto); chain_tip ETag',
  }),
  family({
    id: 'burn_blocks',
    method: 'GET',
    routes: [
      '/extended/v2/burn-blocks/',
      '/extended/v2/burn-blocks/:height_or_hash',
      '/extended/v2/burn-blocks/:height_or_hash/blocks',
      '/extended/v2/burn-blocks/:height_or_hash/pox-transactions',
    ],
    change: 'etag:chain_tip',
    notFound: 'tip',
    burnKeyed: true,
    why: 'burn blocks: chain_tip ETag, which misses burn-only changes, so keyed by the burn height too',
  }),
  family({
    id: 'tx_lists',
    method: 'GET',
    routes: ['/extended/v1/tx/', '/extended/v1/tx/block/:block_hash', '/extended/v1/tx/block_height/:height', '/extended/v3/transactions'],
    change: 'etag:chain_tip',
    why: 'recent and per-block transaction lists: chain_tip ETag',
  }),
  family({
    id: 'mempool',
    method: 'GET',
    routes: ['/extended/v1/tx/mempool', '/extended/v3/mempool/transactions'],
    change: 'etag:mempool',
    // Only v1 filters by ?address=: the v3 list's querystring has no such parameter, and the
    // upstream ignores unknown ones, so /extended/v3/mempool/transactions?address=P is the whole mempool.
    principal: { query: 'address', under: '/extended/v1/' },
    // Upstream getMempoolTxList: sender_address, token_transfer_recipient_address, smart_contract_contract_id or contract_call_contract_id = address.
    movesWith: 'listed_transactions',
    why: 'the global mempool ETag (even with ?address=): any broadcast anywhere changes it; the v3 list carries the chain-tip ETag, which the mempool does not move, so it is refetched, never revalidated',
  }),
  family({
    id: 'tx_raw',
    method: 'GET',
    routes: ['/extended/v1/tx/:tx_id/raw'],
    change: 'immutable',
    evidence: 'raw_tx',
    notFound: 'mempool',
    why: 'raw bytes whose SHA-512/256 is the txid cannot change; a missing tx may arrive any second',
  }),
  family({
    id: 'transaction_detail',
    method: 'GET',
    routes: [
      '/extended/v3/transactions/:tx_id',
      '/extended/v3/transactions/:tx_id/events',
      '/extended/v2/addresses/:address/transactions/:tx_id/events',
      '/extended/v3/principals/:principal/transactions/:tx_id/balance-changes',
    ],
    change: 'etag:transaction',
    notFound: 'mempool',
    why: 'transaction ETag: pending answers move with the mempool, mined ones with the tip',
  }),
  family({
    id: 'stx_supply',
    method: 'GET',
    routes: [
      '/extended/v1/stx_supply/',
      '/extended/v1/stx_supply/total/plain',
      '/extended/v1/stx_supply/circulating/plain',
      '/extended/v1/stx_supply/legacy_format',
    ],
    change: 'etag:chain_tip',
    burnKeyed: true,
    why: 'supply is computed at the tip (locked STX unlock with burn blocks): chain_tip ETag, which misses burn-only changes, so keyed by the burn height too',
  }),
  family({
    id: 'network_block_times',
    method: 'GET',
    routes: ['/extended/v1/info/network_block_times', '/extended/v1/info/network_block_time/:network'],
    change: 'etag:chain_tip',
    why: 'a constant body, but the upstream gives it the chain_tip ETag: 304s after each block',
  }),
  family({
    id: 'nft_holdings',
    method: 'GET',
    routes: ['/extended/v1/tokens/nft/holdings'],
    change: 'etag:chain_tip',
    principal: { query: 'principal' },
    // Upstream tokens.ts reads the nft_custody table (its unanchored twin with ?unanchored): a row
    // moves only with an NFT event, which names the recipient (mint, transfer) or sender (burn,
    // transfer); tx_metadata adds the custody transaction, fixed once mined. No PoX state: burn blocks cannot move it.
    movesWith: 'transactions',
    why: "a principal's NFTs (chain_tip ETag, tagged with the principal): they move only with a block whose NFT events name the principal, so learned across blocks that did not, burn blocks included",
  }),
  family({
    id: 'tokens',
    method: 'GET',
    routes: ['/extended/v1/tokens/nft/history', '/extended/v1/tokens/nft/mints', '/extended/v1/tokens/ft/:token/holders'],
    change: 'etag:chain_tip',
    why: 'token histories and holders: chain_tip ETag',
  }),
  family({
    id: 'contract_info',
    method: 'GET',
    routes: ['/extended/v1/contract/:contract_id', '/extended/v1/contract/by_trait'],
    change: 'etag:chain_tip',
    notFound: 'tip',
    why: 'a contract as the API indexed it: chain_tip ETag; a missing one may be deployed in the next block',
  }),
  family({
    id: 'smart_contracts',
    method: 'GET',
    routes: ['/extended/v2/smart-contracts/status', '/extended/v2/smart-contracts/:contract_id/logs'],
    change: 'etag:chain_tip',
    why: 'deployment status and logs: chain_tip ETag',
  }),
  family({
    id: 'pox_cycles',
    method: 'GET',
    routes: [
      '/extended/v2/pox/cycles',
      '/extended/v2/pox/cycles/:cycle_number',
      '/extended/v2/pox/cycles/:cycle_number/signers',
      '/extended/v2/pox/cycles/:cycle_number/signers/:signer_key',
      '/extended/v2/pox/cycles/:cycle_number/signers/:signer_key/stackers',
    ],
    change: 'etag:chain_tip',
    notFound: 'tip',
    burnKeyed: true,
    why: 'PoX cycles and signers: chain_tip ETag; cycles turn with burn blocks, so keyed by the burn height too',
  }),
  family({
    id: 'pox_events',
    method: 'GET',
    routes: [
      '/extended/v1/:pox/events',
      '/extended/v1/:pox/tx/:tx_id',
      '/extended/v1/:pox/stacker/:principal',
      '/extended/v1/:pox/:pool_principal/delegations',
    ],
    change: 'etag:chain_tip',
    why: 'PoX contract events: chain_tip ETag',
  }),
  family({
    id: 'pox_transactions',
    method: 'GET',
    routes: ['/extended/v2/addresses/:burnchain_address/pox-transactions'],
    change: 'etag:chain_tip',
    why: "a Bitcoin address's PoX transactions: chain_tip ETag",
  }),
  family({
    id: 'staking',
    method: 'GET',
    routes: [
      '/extended/v3/principals/:principal/staking',
      '/extended/v3/principals/:principal/staking/bonds',
      '/extended/v3/staking/bonds',
      '/extended/v3/staking/bonds/:bond_index',
      '/extended/v3/staking/bonds/:bond_index/allowlist',
      '/extended/v3/staking/bonds/:bond_index/allowlist/:principal',
      '/extended/v3/staking/bonds/:bond_index/registrations',
      '/extended/v3/staking/bonds/:bond_index/registrations/:principal',
      '/extended/v3/staking/signers',
      '/extended/v3/staking/signers/:principal',
      '/extended/v3/staking/signers/:principal/stakers',
    ],
    change: 'etag:chain_tip',
    burnKeyed: true,
    why: 'v3 staking: chain_tip ETag; stakes and signers turn with PoX cycles, which turn with burn blocks, so keyed by the burn height too',
  }),
  family({
    id: 'principal_history',
    method: 'GET',
    routes: [
      '/extended/v1/address/:principal/transactions_with_transfers',
      '/extended/v1/address/:principal/assets',
      '/extended/v1/address/:principal/stx_inbound',
      '/extended/v3/principals/:principal/transactions',
      '/extended/v3/principals/:principal/balance-changes',
    ],
    change: 'etag:principal',
    principal: { param: 'principal' },
    why: "the principal ETag: changes with the principal's own confirmed activity (or PoX lock state)",
  }),
  family({
    id: 'balances_ft',
    method: 'GET',
    routes: [
      '/extended/v2/addresses/:principal/balances/ft',
      '/extended/v2/addresses/:principal/balances/ft/:token',
      '/extended/v3/principals/:principal/balances/ft',
      '/extended/v3/principals/:principal/balances/ft/:asset_identifier',
      '/extended/v3/principals/:principal/balances/nft',
    ],
    change: 'etag:principal',
    principal: { param: 'principal' },
    // FT and NFT balances move only with token events (transfers, mints, burns name the principal),
    // never with STX transfers, fees or PoX state: learning survives those blocks for them.
    movesWith: 'token_events',
    why: 'token balances: the principal ETag (confirmed activity only)',
  }),
  family({
    id: 'balances_stx',
    method: 'GET',
    routes: ['/extended/v2/addresses/:principal/balances/stx'],
    change: 'etag:principal',
    principal: { param: 'principal' },
    movesWithWhenUnlocked: true,
    variant: { query: 'include_mempool', family: 'balances_stx_pending' },
    // Upstream v2/addresses.ts: without include_mempool the body holds no mempool field (the
    // estimated and pending balances are added only with it), so it moves with confirmed state only.
    why: 'v2 STX balance without include_mempool: confirmed state only (the mempool fields come with include_mempool), the principal ETag',
  }),
  family({
    id: 'balances_stx_pending',
    method: 'GET',
    // v2 balances/stx reaches this family through balances_stx's variant (any include_mempool).
    routes: ['/extended/v3/principals/:principal/balances/stx'],
    change: 'etag:principal_mempool',
    principal: { param: 'principal' },
    why: 'STX balance with pending in/outflows: principal_mempool ETag (mempool class)',
  }),
  family({
    id: 'address_nonces',
    method: 'GET',
    routes: ['/extended/v1/address/:principal/nonces', '/extended/v3/principals/:principal/nonces'],
    change: 'etag:principal_mempool',
    principal: { param: 'principal' },
    // Upstream getAddressNonces (and at a block): MAX(nonce) of txs and mempool txs whose sender, or sponsor when sponsored, it is.
    movesWith: 'sent_transactions',
    why: "next nonce counts the principal's pending txs: principal_mempool ETag (mempool class)",
  }),
  family({
    id: 'address_mempool',
    method: 'GET',
    routes: ['/extended/v1/address/:principal/mempool', '/extended/v3/principals/:principal/mempool/transactions'],
    change: 'etag:principal_mempool',
    principal: { param: 'principal' },
    // v1 /address/:p/mempool is getMempoolTxList({ address }); v3 getPrincipalMempoolTransactionSummaries
    // filters on the same four columns (sender, token transfer recipient, deployed and called contract).
    movesWith: 'listed_transactions',
    why: "a principal's pending transactions: principal_mempool ETag (mempool class)",
  }),
  family({
    id: 'search',
    method: 'GET',
    routes: ['/extended/v1/search/:id'],
    change: 'tip',
    mempoolDependent: true,
    why: 'no ETag (no-store); names what the id is at the tip, or a transaction found in the mempool (which any broadcast can change): keyed by the tip, mempool class',
  }),
  family({
    id: 'burnchain_rewards',
    method: 'GET',
    routes: [
      '/extended/v1/burnchain/reward_slot_holders',
      '/extended/v1/burnchain/reward_slot_holders/:address',
      '/extended/v1/burnchain/rewards',
      '/extended/v1/burnchain/rewards/:address',
      '/extended/v1/burnchain/rewards/:address/total',
    ],
    change: 'tip',
    burnKeyed: true,
    why: 'no ETag (no-store); rewards arrive with burn blocks: keyed by the tip and the burn height',
  }),
  family({
    id: 'bns',
    method: 'GET',
    routes: [
      '/v1/names/',
      '/v1/names/:name',
      '/v1/names/:name/subdomains',
      '/v1/names/:name/zonefile',
      '/v1/names/:name/zonefile/:zoneFileHash',
      '/v1/namespaces/',
      '/v1/namespaces/:tld/names',
      '/v1/addresses/:blockchain/:address',
      '/v2/prices/namespaces/:tld',
      '/v2/prices/names/:name',
    ],
    change: 'etag:chain_tip',
    notFound: 'tip',
    why: 'BNS: chain_tip ETag; a missing name may be registered in the next block',
  }),
  family({
    id: 'faucets',
    method: 'GET',
    routes: ['/extended/v1/faucets/btc/:address'],
    change: 'never',
    why: 'a testnet faucet: an action, not a read',
  }),

  // --- The stacks-node RPC under /v2 (no ETag: the upstream sends Cache-Control: no-store) ---
  family({
    id: 'v2_accounts',
    method: 'GET',
    routes: ['/v2/accounts/:principal'],
    change: 'tip',
    principal: { param: 'principal' },
    movesWithWhenUnlocked: true,
    why: 'balance, lock and nonce at the tip (mempool ignored): with ?proof=0 not keyed by the tip, learned across blocks that did not touch the principal (no burn block); with a proof (the default) keyed by the tip: a MARF proof is new every block',
  }),
  family({
    id: 'v2_info',
    method: 'GET',
    routes: ['/v2/info'],
    change: 'tip',
    burnKeyed: true,
    why: 'the node tip and burn height: keyed by both',
  }),
  family({
    id: 'v2_pox',
    method: 'GET',
    routes: ['/v2/pox'],
    change: 'tip',
    burnKeyed: true,
    why: 'PoX state moves with Stacks and burn blocks: keyed by both',
  }),
  family({
    id: 'fee_transfer',
    method: 'GET',
    routes: ['/v2/fees/transfer'],
    change: 'tip',
    why: 'the fee rate per byte, re-read each block',
  }),
  family({
    id: 'fee_estimate',
    method: 'POST',
    routes: ['/v2/fees/transaction'],
    change: 'tip',
    why: 'the fee market at the tip, per payload: keyed by the canonical body and the tip',
  }),
  family({
    id: 'contract_interface',
    method: 'GET',
    routes: ['/v2/contracts/interface/:contract_address/:contract_name'],
    change: 'immutable',
    evidence: 'deploy_tx',
    notFound: 'tip',
    why: 'fixed once the deploy transaction is final; a missing contract may be deployed in the next block',
  }),
  family({
    id: 'contract_source',
    method: 'GET',
    routes: ['/v2/contracts/source/:contract_address/:contract_name'],
    change: 'immutable',
    evidence: 'deploy_tx',
    notFound: 'tip',
    why: 'fixed once the deploy is final (with ?proof=0: a proof is per tip); missing: maybe next block',
  }),
  family({
    id: 'constant_val',
    method: 'GET',
    routes: ['/v2/constant_val/:contract_address/:contract_name/:constant_name'],
    change: 'immutable',
    evidence: 'deploy_tx',
    notFound: 'tip',
    why: "a constant is fixed by the contract's code, once its deploy is final",
  }),
  family({
    id: 'data_var',
    method: 'GET',
    routes: ['/v2/data_var/:contract_address/:contract_name/:var_name'],
    change: 'tip',
    evidence: 'pinned_tip',
    why: 'state at the tip; immutable when ?tip= pins a final block',
  }),
  family({
    id: 'call_read',
    method: 'POST',
    routes: ['/v2/contracts/call-read/:contract_address/:contract_name/:function_name'],
    change: 'tip',
    evidence: 'pinned_tip',
    why: 'a read-only call at the tip, keyed by the canonical body; immutable when ?tip= pins a final block',
  }),
  family({
    id: 'map_entry',
    method: 'POST',
    routes: ['/v2/map_entry/:contract_address/:contract_name/:map_name'],
    change: 'tip',
    evidence: 'pinned_tip',
    why: 'a map entry at the tip, keyed by the canonical key; immutable when ?tip= pins a final block',
  }),
  family({
    id: 'broadcast',
    method: 'POST',
    routes: ['/v2/transactions'],
    change: 'never',
    why: 'a broadcast: never cached (the passthrough forwards it; accepted ones refresh the sender)',
  }),
];

/**
 * Upstream GET routes that are in no family, on purpose: the passthrough forwards them as today.
 * `/v2/*` stands for the node RPC routes the table does not name.
 */
export const PASSED_THROUGH_ROUTES: ReadonlyMap<string, string> = new Map([
  ['/', "the upstream's redirect to /extended"],
  ['/v2/*', 'other stacks-node RPC routes: unknown shapes, forwarded as sent'],
]);

export const FAMILY_BY_ID: ReadonlyMap<string, Family> = new Map(FAMILIES.map((f) => [f.id, f]));

/** Node RPC routes the table names under the upstream's `/v2/*` proxy, which its own route list does not spell out. */
export const NODE_RPC_GET_ROUTES: readonly string[] = FAMILIES.filter((f) => f.method === 'GET' && f.routes.some((r) => isNodeRpc(r))).flatMap((f) =>
  f.routes.filter(isNodeRpc),
);

/** Under the upstream's `/v2/*` proxy (not its BNS prices). */
export function isNodeRpc(route: string): boolean {
  return route.startsWith('/v2/') && !route.startsWith('/v2/prices/');
}

/** Whether a family's answers are ever stored. */
export const caches = (f: Family): boolean => f.change !== 'never';
