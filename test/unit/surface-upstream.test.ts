/**
 * The surface upstream (testkit/surface-upstream) behaves as the upstream does where issue 15's
 * measurements depend on it: ETag kinds per route (read-surface.md §1.4), 304s, `no-store` on
 * `/v2`, `Warning: 299` and 410 on deprecated routes, the node's mempool admission of real
 * signed transactions, reads pinned with `?tip=`, and answers recomputed at a past moment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cl } from '@stacks/transactions';
import {
  familyOf,
  judgeExchanges,
  signContractCall,
  signTransfer,
  startSurfaceUpstream,
  type Exchange,
  type SurfaceUpstream,
} from '../../testkit/surface-upstream/index.js';

let upstream: SurfaceUpstream;
beforeAll(async () => {
  upstream = await startSurfaceUpstream({ wallets: 12, bots: 3, historyBlocks: 8 });
});
afterAll(() => upstream.close());

const get = async (path: string, headers: Record<string, string> = {}) => {
  const r = await fetch(upstream.url + path, { headers });
  return {
    status: r.status,
    etag: r.headers.get('etag'),
    cacheControl: r.headers.get('cache-control'),
    warning: r.headers.get('warning'),
    body: await r.text(),
  };
};
const post = async (path: string, body: unknown, contentType = 'application/json') => {
  const r = await fetch(upstream.url + path, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' || body instanceof Blob ? body : JSON.stringify(body),
  });
  return { status: r.status, cacheControl: r.headers.get('cache-control'), body: await r.text() };
};
const nextNonce = async (address: string) =>
  (JSON.parse((await get(`/extended/v1/address/${address}/nonces`)).body) as { possible_next_nonce: number }).possible_next_nonce;

describe('surface upstream', () => {
  it('moves each ETag kind only with what it depends on', async () => {
    const [alice, bob, carol] = upstream.cast.wallets as [
      (typeof upstream.cast.wallets)[0],
      (typeof upstream.cast.wallets)[0],
      (typeof upstream.cast.wallets)[0],
    ];
    const read = async () => ({
      tip: (await get('/extended')).etag,
      mempool: (await get('/extended/v1/tx/mempool?address=' + carol.address)).etag,
      alicePrincipal: (await get(`/extended/v1/address/${alice.address}/transactions`)).etag,
      aliceMempool: (await get(`/extended/v1/address/${alice.address}/nonces`)).etag,
      carolMempool: (await get(`/extended/v1/address/${carol.address}/nonces`)).etag,
      block3: (await get('/extended/v2/blocks/3')).etag,
    });
    upstream.mine(); // alice's history from genesis is confirmed
    const before = await read();
    // alice pays bob: her mempool-aware ETag and the global mempool ETag move, nothing confirmed does.
    expect((await post('/v2/transactions', { tx: await signTransfer(alice, bob.address, 5n, await nextNonce(alice.address), 200n) })).status).toBe(200);
    const pending = await read();
    // Her pending list, in the v1 form (deprecated) and the v3 one alike: one page, the principal_mempool ETag.
    const v1List = await get(`/extended/v1/address/${alice.address}/mempool?limit=20`);
    const v3List = await get(`/extended/v3/principals/${alice.address}/mempool/transactions?limit=20`);
    expect(v1List.status).toBe(200);
    expect(v1List.warning).toMatch(/^299 - "Deprecated/);
    expect(JSON.parse(v1List.body)).toMatchObject({ limit: 20, offset: 0, total: 1 });
    expect(v1List.body).toBe(v3List.body);
    expect(v1List.etag).toBe(pending.aliceMempool);
    expect(pending.mempool).not.toBe(before.mempool);
    expect(pending.aliceMempool).not.toBe(before.aliceMempool);
    expect(pending.alicePrincipal).toBe(before.alicePrincipal);
    expect(pending.carolMempool).toBe(before.carolMempool);
    expect(pending.tip).toBe(before.tip);
    // Mined: the tip moves, alice's confirmed activity too; carol's does not; block 3 keeps its ETag.
    upstream.mine();
    const mined = await read();
    expect(mined.tip).not.toBe(pending.tip);
    expect(mined.alicePrincipal).not.toBe(pending.alicePrincipal);
    expect(mined.carolMempool).toBe(before.carolMempool);
    expect(mined.block3).toBe(before.block3);
  });

  it('answers 304 on a matching If-None-Match, keeps Cache-Control on it, and /v2 is no-store without an ETag', async () => {
    const first = await get('/extended/v2/blocks?limit=2');
    expect(first.cacheControl).toBe('public, no-cache, must-revalidate');
    const again = await get('/extended/v2/blocks?limit=5', { 'if-none-match': `W/${first.etag}` });
    expect(again.status).toBe(304);
    expect(again.cacheControl).toBe('public, no-cache, must-revalidate');
    const info = await get('/v2/info');
    expect(info.etag).toBeNull();
    expect(info.cacheControl).toBe('no-store');
  });

  it('marks deprecated routes with Warning 299 and, when switched off, answers them 410 Gone', async () => {
    const p = upstream.cast.wallets[1]?.address as string;
    expect((await get(`/extended/v1/address/${p}/nonces`)).warning).toMatch(/^299 - "Deprecated/);
    expect((await get(`/extended/v3/principals/${p}/nonces`)).warning).toBeNull();
    upstream.setDeprecatedGone(true);
    try {
      const gone = await get(`/extended/v1/address/${p}/nonces`);
      expect(gone.status).toBe(410);
      expect(JSON.parse(gone.body)).toMatchObject({ error: 'Gone' });
      expect((await get(`/extended/v3/principals/${p}/nonces`)).status).toBe(200);
    } finally {
      upstream.setDeprecatedGone(false);
    }
  });

  it('admits broadcasts as the node does: a used nonce and a nonce taken in the mempool are rejected, octet-stream works', async () => {
    const [, , , dave, erin] = upstream.cast.wallets as Array<(typeof upstream.cast.wallets)[0]>;
    const nonce = await nextNonce(dave!.address);
    const raw = await signTransfer(dave!, erin!.address, 7n, nonce, 200n);
    const accepted = await post('/v2/transactions', new Blob([Buffer.from(raw, 'hex')]), 'application/octet-stream');
    expect(accepted.status).toBe(200);
    expect(accepted.cacheControl).toBe('no-store');
    const conflicting = await post('/v2/transactions', { tx: await signTransfer(dave!, erin!.address, 8n, nonce, 300n) });
    expect(JSON.parse(conflicting.body)).toMatchObject({ error: 'transaction rejected', reason: 'ConflictingNonceInMempool' });
    expect(await nextNonce(dave!.address)).toBe(nonce + 1);
    upstream.mine();
    const reused = await post('/v2/transactions', { tx: await signTransfer(dave!, erin!.address, 9n, nonce, 300n) });
    expect(JSON.parse(reused.body)).toMatchObject({ reason: 'BadNonce', reason_data: { expected: nonce + 1, actual: nonce } });
  });

  it('reads contract state at the block ?tip= names, and recomputes past answers', async () => {
    const { deployer, wallets } = upstream.cast;
    const frank = wallets[5]!;
    const key = JSON.stringify(`0x${Cl.serialize(Cl.principal(frank.address)).replace(/^0x/, '')}`);
    const tipBefore = upstream.current();
    const indexBefore = tipBefore.blocks[tipBefore.blocks.length - 1]!.indexHash;
    const before = Date.now();
    await post('/v2/transactions', {
      tx: await signContractCall(frank, `${deployer.address}.counter`, 'set-score', [Cl.uint(42n)], await nextNonce(frank.address), 500n),
    });
    upstream.mine();
    const now = await post(`/v2/map_entry/${deployer.address}/counter/scores?proof=0`, key);
    const pinned = await post(`/v2/map_entry/${deployer.address}/counter/scores?proof=0&tip=${indexBefore.slice(2)}`, key);
    expect(JSON.parse(now.body)).toEqual({ data: `0x${Cl.serialize(Cl.some(Cl.uint(42n))).replace(/^0x/, '')}` });
    expect(JSON.parse(pinned.body)).toEqual({ data: '0x09' });
    const url = `/v2/map_entry/${deployer.address}/counter/scores?proof=0`;
    expect(upstream.answerAt(before, 'POST', url, key).body).toBe(pinned.body);
    expect(upstream.answerAt(Date.now(), 'POST', url, key).body).toBe(now.body);
  });

  it("gives a confirmed transaction's events through tx/multiple (what a block learner reads), keyed by id", async () => {
    const s = upstream.current();
    const withEvents = [...s.mined.values()].find((t) => t.events.length > 0)!;
    const unknown = `0x${'cd'.repeat(32)}`;
    const answer = await get(`/extended/v1/tx/multiple?tx_id=${withEvents.core.txId},${unknown}&event_limit=100`);
    const body = JSON.parse(answer.body) as Record<string, { found: boolean; result: { events?: unknown[] } }>;
    expect(body[withEvents.core.txId]).toMatchObject({ found: true });
    expect(body[withEvents.core.txId]?.result.events).toHaveLength(withEvents.events.length);
    expect(body[unknown]).toEqual({ found: false, result: { tx_id: unknown } });
    const blockTxs = JSON.parse((await get(`/extended/v2/blocks/${withEvents.height}/transactions`)).body) as {
      results: Array<{ tx_id: string; event_count: number; events: unknown[] }>;
    };
    const listed = blockTxs.results.find((t) => t.tx_id === withEvents.core.txId);
    expect(listed).toMatchObject({ event_count: withEvents.events.length, events: [] });
  });

  it('answers a broken path with a 400 in the upstream shape and a route it does not know with 404', async () => {
    expect((await get('/extended/v1/tx/%E0%A4%A')).status).toBe(400);
    expect(JSON.parse((await get('/extended/v9/nothing')).body)).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('classifies requests into route families (the ids of the 13 routes and of the surface table)', () => {
    const p = 'ST3PXJ1K7R028T0CX4SPZVBDJ2P1GK9DYM22EEPVS';
    const h = `0x${'ab'.repeat(32)}`;
    const cases: Array<[string, string, string]> = [
      ['GET', '/extended', 'status'],
      ['GET', `/extended/v1/tx/${h}`, 'tx_by_id'],
      ['GET', `/extended/v1/tx/${h}/raw`, 'tx_raw'],
      ['GET', `/extended/v1/tx/mempool?address=${p}`, 'mempool'],
      ['GET', '/extended/v1/tx/mempool/stats', 'mempool_stats'],
      ['GET', `/extended/v1/address/${p}/nonces`, 'address_nonces'],
      ['GET', `/extended/v1/address/${p}/stx`, 'address_stx_balance'],
      ['GET', `/extended/v1/address/${p}/transactions_with_transfers?limit=3`, 'principal_history'],
      ['GET', `/extended/v2/addresses/${p}/transactions`, 'address_transactions_v2'],
      ['GET', `/extended/v3/principals/${p}/balances/stx`, 'balances_stx_pending'],
      ['GET', '/extended/v2/blocks?limit=3', 'blocks'],
      ['GET', '/extended/v2/blocks/12/transactions', 'block_transactions'],
      ['GET', '/extended/v2/blocks/12', 'block'],
      ['POST', `/v2/contracts/call-read/${p}/counter/get-counter?tip=${h.slice(2)}`, 'call_read'],
      ['POST', '/v2/transactions', 'broadcast'],
      ['GET', `/v2/accounts/${p}?proof=0`, 'v2_accounts'],
      ['GET', '/extended/v1/faucets/stx', 'other'],
    ];
    for (const [method, url, id] of cases) expect(familyOf(method, url).id, url).toBe(id);
  });
});

describe('surface upstream burn chain (upstream-contract §5)', () => {
  it('mineBurn moves the burn tip /extended and /v2/info report, not the ETag; 404 by_burn_block_height; the next block opens its tenure in the newest burn block', async () => {
    const statusOf = async () => {
      const status = await get('/extended');
      return { etag: status.etag, ...(JSON.parse(status.body) as { chain_tip: { block_height: number; burn_block_height: number } }).chain_tip };
    };
    upstream.mine();
    const before = await statusOf();
    const latestBefore = JSON.parse((await get('/extended/v2/blocks/latest')).body) as { burn_block_height: number; tenure_height: number };
    expect(before.burn_block_height).toBe(latestBefore.burn_block_height);
    upstream.mineBurn(3);
    const after = await statusOf();
    expect(after).toEqual({ ...before, burn_block_height: before.burn_block_height + 3 });
    expect((await get('/extended', { 'if-none-match': before.etag ?? '' })).status).toBe(304);
    expect((JSON.parse((await get('/v2/info')).body) as { burn_block_height: number }).burn_block_height).toBe(before.burn_block_height + 3);
    for (let h = before.burn_block_height + 1; h <= before.burn_block_height + 3; h++) {
      expect((await get(`/extended/v1/block/by_burn_block_height/${h}`)).status).toBe(404);
    }
    upstream.mine();
    const opened = JSON.parse((await get('/extended/v2/blocks/latest')).body) as { burn_block_height: number; tenure_height: number };
    expect(opened).toMatchObject({ burn_block_height: before.burn_block_height + 3, tenure_height: latestBefore.tenure_height + 1 });
    expect((await statusOf()).burn_block_height).toBe(before.burn_block_height + 3);
  });
});

describe('surface upstream: what the real mix adds (issue 28)', () => {
  let up: SurfaceUpstream;
  beforeAll(async () => {
    up = await startSurfaceUpstream({ wallets: 6, bots: 2, historyBlocks: 4, libraryContracts: 3 });
  });
  afterAll(() => up.close());

  it('answers /extended/v2/mempool/fees with the mempool ETag, per transaction type, moving with the mempool', async () => {
    const fees = async () => {
      const r = await fetch(`${up.url}/extended/v2/mempool/fees`);
      return { status: r.status, etag: r.headers.get('etag'), body: JSON.parse(await r.text()) as Record<string, Record<string, number>> };
    };
    const mempoolEtag = async () => (await fetch(`${up.url}/extended/v1/tx/mempool?limit=1`)).headers.get('etag');
    const before = await fees();
    expect(before.status).toBe(200);
    expect(before.etag).toBe(await mempoolEtag());
    expect(Object.keys(before.body).sort()).toEqual(['all', 'contract_call', 'smart_contract', 'token_transfer']);
    expect(Object.keys(before.body.all ?? {}).sort()).toEqual(['high_priority', 'low_priority', 'medium_priority', 'no_priority']);
    await up.backgroundTx();
    const after = await fees();
    expect(after.etag).not.toBe(before.etag);
    expect(after.etag).toBe(await mempoolEtag());
    expect(after.body.all?.high_priority).toBeGreaterThan(0);
  });

  it('serves the library contracts deployed at genesis (interface, source, call-read) and 404s one never deployed', async () => {
    const deployer = up.cast.deployer.address;
    const iface = await fetch(`${up.url}/v2/contracts/interface/${deployer}/lib-2`);
    expect(iface.status).toBe(200);
    expect(iface.headers.get('etag')).toBeNull();
    expect((JSON.parse(await iface.text()) as { functions: Array<{ name: string }> }).functions.map((f) => f.name)).toEqual(['get-version']);
    expect((await fetch(`${up.url}/v2/contracts/interface/${deployer}/lib-3`)).status).toBe(404);
    const source = JSON.parse(await (await fetch(`${up.url}/v2/contracts/source/${deployer}/lib-1`)).text()) as { source: string };
    expect(source.source).toBe('(define-read-only (get-version) u1)');
    const call = await fetch(`${up.url}/v2/contracts/call-read/${deployer}/lib-2/get-version`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sender: deployer, arguments: [] }),
    });
    expect(JSON.parse(await call.text())).toEqual({ okay: true, result: `0x${Cl.serialize(Cl.uint(2n)).replace(/^0x/, '')}` });
  });

  it('counts a WebSocket upgrade attempt (family ws_upgrade) and refuses it', async () => {
    up.resetCounts();
    const { request } = await import('node:http');
    await new Promise<void>((resolve) => {
      const req = request(`${up.url}/extended/v1/ws`, { headers: { connection: 'Upgrade', upgrade: 'websocket' } });
      req.on('error', () => resolve());
      req.on('response', () => resolve());
      req.on('upgrade', () => resolve());
      req.end();
    });
    expect(up.requests.map((r) => `${r.family} ${r.url}`)).toEqual(['ws_upgrade /extended/v1/ws']);
  });
});

describe('surface upstream: a stuck backlog (issue 28)', () => {
  it('keeps the stuck transactions pending through blocks, below the fresh ones in the newest-first list', async () => {
    const up = await startSurfaceUpstream({ wallets: 6, bots: 2, historyBlocks: 4, stuckBacklog: 12 });
    try {
      const total = async () =>
        JSON.parse(await (await fetch(`${up.url}/extended/v1/tx/mempool?limit=1`)).text()) as { total: number; results: Array<{ tx_id: string }> };
      expect((await total()).total).toBe(12);
      up.mine();
      up.mine();
      expect((await total()).total).toBe(12);
      const fresh = await up.backgroundTx();
      const after = await total();
      expect(after.total).toBe(13);
      expect(after.results[0]?.tx_id).toBe(`0x${(await import('@stacks/transactions')).deserializeTransaction(fresh).txid()}`);
    } finally {
      await up.close();
    }
  });
});

describe('oracle: a family allowed to lag (issue 28)', () => {
  it('accepts a mempool fees answer as old as windowMsByFamily allows, and no older', async () => {
    let clock = 1_000_000;
    const up = await startSurfaceUpstream({ wallets: 4, bots: 2, historyBlocks: 4, now: () => clock });
    try {
      const url = '/extended/v2/mempool/fees';
      const before = up.answerAt(clock, 'GET', url).body;
      clock += 1_000;
      await up.backgroundTx();
      clock += 3_000;
      expect(up.answerAt(clock, 'GET', url).body).not.toBe(before);
      const exchange: Exchange = { actor: 'explorer', method: 'GET', url, family: 'mempool_fees', tSend: clock, tRecv: clock, status: 200, answer: before };
      expect(judgeExchanges(up, [exchange], { windowMs: 2_000 }).mismatches).toHaveLength(1);
      expect(judgeExchanges(up, [exchange], { windowMs: 2_000, windowMsByFamily: { mempool_fees: 5_000 } }).mismatches).toHaveLength(0);
      expect(judgeExchanges(up, [exchange], { windowMs: 2_000, windowMsByFamily: { mempool_fees: 2_500 } }).mismatches).toHaveLength(1);
    } finally {
      await up.close();
    }
  });
});
