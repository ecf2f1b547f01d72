/**
 * The purposes the proxy's own upstream requests are counted by (the label of
 * stacks_proxy_own_upstream_requests_total; upstream/own-purpose.ts carries them to the client).
 */
export const OWN_PURPOSES = [
  /** The chain tip poll (GET /extended), conditional or full. */
  'tip_poll',
  /** A block read to check a tip or an answer's block (its anchor, its place in the chain). */
  'block_check',
  /** The search for where a fork left the chain (canonical hashes by height). */
  'fork_search',
  /** The finality watermark's burn-block reads (by_burn_block_height). */
  'finality',
  /** The block learner: a new block's transactions and their events. */
  'block_learner',
  /** The mempool watcher's polls and pages. */
  'mempool_watcher',
  /** A contract's deploy evidence (its contract record and deploy transaction). */
  'contract_lookup',
  /** A pinned `?tip=` block's evidence. */
  'pinned_tip',
  /** The warm-up of a new block (live.warm). */
  'warmup',
  /** A push feed's connection attempt (WebSocket or Socket.IO upgrade). */
  'push_connect',
] as const;

export type OwnPurpose = (typeof OWN_PURPOSES)[number];
