/**
 * A fake Stacks Blockchain API for the WHOLE public read surface (issue 15): a real node:http
 * server backed by a pure chain model (blocks on a timer or on demand, burn blocks, a moving
 * mempool, hundreds of principals with STX, nonces, tokens, NFTs and names, popular contracts
 * whose state contract calls change), answering with the upstream's ETag kinds, 304s,
 * `Warning: 299` and (when switched) 410 Gone, `/v2` node RPC without ETags, and broadcasts of
 * real signed transactions. It keeps its recent snapshots, so `answerAt(time, …)` recomputes
 * what it answered at any recent moment: the oracle the proxy's answers are compared with.
 *
 * Parts: wallets.ts (keys), contracts.ts (contract state and read-only functions), model.ts
 * (snapshot and transitions), genesis.ts (the starting chain), bodies.ts and answers.ts (the
 * pure answers), families.ts (route families for reports), server.ts (HTTP, history, counts),
 * signing.ts (real signed transactions), mix.ts (the simulated clients), oracle.ts (judging).
 */
export { answer, type Reply, type SurfaceRequest } from './answers.js';
export { familyOf, type ChangeClass, type Family } from './families.js';
export type { ChainCast, ChainOptions } from './genesis.js';
export { tipOf, type Snapshot } from './model.js';
export { render, startSurfaceUpstream, SurfaceUpstream, type CountedRequest, type RenderedAnswer, type SurfaceUpstreamOptions } from './server.js';
export { signContractCall, signTransfer } from './signing.js';
export { deriveWallet, type Wallet } from './wallets.js';
export { ClientMix, type Actor, type Exchange, type MixOptions, type MixProfile, type SendStats } from './mix.js';
export { judgeExchanges, servedFigures, type Mismatch, type OracleOptions, type OracleVerdict, type ServedFigures } from './oracle.js';
export { startUrlCache, type UrlCache } from './url-cache.js';
export { ceilingOf, requestKey, snapshotLookup, type AnswerLookup, type Ceiling, type CeilingCount } from './ceiling.js';
