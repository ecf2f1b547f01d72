import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from 'vitest';
import WebSocket from 'ws';
import { RECORDED, startFakeUpstream, findRecording, loadRecordings, recordingsMatching, type FakeUpstream } from '../../testkit/index.js';

const TX_ID = RECORDED.confirmedTxId;
/** Mined in block 8 (the recordings' tx/multiple bodies use it with TX_ID, mined in block 1). */
const LATER_TX_ID = '0xf767164c588e43b1af80e466e59f120037c17bd49b25b1529543132a2aa331a8';

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function get(up: FakeUpstream, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(up.url + path, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

async function getJson<T = Record<string, unknown>>(up: FakeUpstream, path: string): Promise<T> {
  return JSON.parse((await get(up, path)).body) as T;
}

async function etagOf(up: FakeUpstream, path: string): Promise<string | null> {
  return (await get(up, path)).headers.get('etag');
}

/** The mempool ETag (`"<epoch seconds>.<micros>"`) `seconds` later: the fake moves it 1 s per change. */
function laterMempoolEtag(etag: string | null, seconds: number): string {
  const [whole = '', micros = ''] = (etag ?? '').replace(/"/g, '').split('.');
  return `"${Number(whole) + seconds}.${micros}"`;
}

/** A new fake for every test (at the recorded state). */
function useFreshFakeUpstream(): () => FakeUpstream {
  let up: FakeUpstream | undefined;
  beforeEach(async () => {
    up = await startFakeUpstream();
  });
  afterEach(async () => {
    await up?.close();
  });
  return () => {
    if (!up) throw new Error('fake upstream not started');
    return up;
  };
}

function useFakeUpstream(): () => FakeUpstream {
  let up: FakeUpstream | undefined;
  beforeAll(async () => {
    up = await startFakeUpstream();
  });
  afterAll(async () => {
    await up?.close();
  });
  return () => {
    if (!up) throw new Error('fake upstream not started');
    return up;
  };
}

describe('fake upstream at the recorded state', () => {
  const upstream = useFakeUpstream();

  it('replays every recorded GET byte for byte: status, body and headers', async () => {
    const mismatches: string[] = [];
    for (const rec of loadRecordings()) {
      const answer = await get(upstream(), rec.path);
      const expected: Record<string, string | number | undefined> = {
        status: rec.status,
        body: rec.body,
        'content-type': rec.headers['content-type'],
        etag: rec.headers.etag,
        'cache-control': rec.headers['cache-control'],
        location: rec.headers.location,
      };
      const actual: Record<string, string | number | undefined> = {
        status: answer.status,
        body: answer.body,
        'content-type': answer.headers.get('content-type') ?? undefined,
        etag: answer.headers.get('etag') ?? undefined,
        'cache-control': answer.headers.get('cache-control') ?? undefined,
        location: answer.headers.get('location') ?? undefined,
      };
      for (const [field, value] of Object.entries(expected)) {
        if (actual[field] !== value) mismatches.push(`${rec.path} ${field}: ${actual[field]} != ${value}`);
      }
    }
    expect(mismatches).toEqual([]);
  }, 60_000);

  it('builds every recorded tx/multiple body from the tx model, byte for byte', async () => {
    const recorded = recordingsMatching(/^\/extended\/v1\/tx\/multiple\?/);
    expect(recorded.length).toBe(8);
    for (const rec of recorded) expect((await get(upstream(), rec.path)).body).toBe(rec.body);
  });

  it('accepts the comma form of tx/multiple like the repeated form', async () => {
    const repeated = await get(upstream(), `/extended/v1/tx/multiple?tx_id=${TX_ID}&tx_id=${LATER_TX_ID}`);
    const comma = await get(upstream(), `/extended/v1/tx/multiple?tx_id=${TX_ID},${LATER_TX_ID}`);
    expect(comma.body).toBe(repeated.body);
  });

  it('orders tx/multiple: mined by height, mempool, unknown; found keys lowercase; duplicates collapse', async () => {
    const upperCase = `0x${TX_ID.slice(2).toUpperCase()}`;
    const ids = [RECORDED.unknownTxId, RECORDED.pendingTxId, LATER_TX_ID, upperCase, TX_ID];
    const query = ids.map((id) => `tx_id=${id}`).join('&');
    const body = await getJson(upstream(), `/extended/v1/tx/multiple?${query}`);
    expect(Object.keys(body)).toEqual([TX_ID, LATER_TX_ID, RECORDED.pendingTxId, RECORDED.unknownTxId]);
    expect(body[RECORDED.unknownTxId]).toEqual({ found: false, result: { tx_id: RECORDED.unknownTxId } });
  });

  it('serves the recorded found-tx result byte-identical to the /tx/<id> body', async () => {
    const multiple = await get(upstream(), `/extended/v1/tx/multiple?tx_id=${TX_ID}`);
    const single = await get(upstream(), `/extended/v1/tx/${TX_ID}`);
    expect(multiple.body).toBe(`{"${TX_ID}":{"found":true,"result":${single.body}}}`);
  });

  it('answers If-None-Match with a 304 without ETag or body (quoted, weak and list forms)', async () => {
    const tip = `"${RECORDED.tipIndexHash}"`;
    for (const inm of [tip, `W/${tip}`, `"other", ${tip}`]) {
      const answer = await get(upstream(), '/extended', { 'if-none-match': inm });
      expect(answer.status).toBe(304);
      expect(answer.body).toBe('');
      expect(answer.headers.get('etag')).toBeNull();
      expect(answer.headers.get('cache-control')).toBe('public, no-cache, must-revalidate');
      expect(answer.headers.get('x-api-version')).toBe('v8.13.6 (fake)');
    }
    expect((await get(upstream(), '/extended', { 'if-none-match': '*' })).status).toBe(200);
    expect((await get(upstream(), '/extended', { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  it('answers 304 instead of the chain-tip 404 of by_burn_block_height, keeping the Warning', async () => {
    const path = `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithoutBlock}`;
    const answer = await get(upstream(), path, { 'if-none-match': `"${RECORDED.tipIndexHash}"` });
    expect(answer.status).toBe(304);
    expect(answer.headers.get('warning')).toContain('Deprecated');
  });

  it('sends X-API-Version except on validation errors, and Warning only on deprecated routes', async () => {
    const invalid = await get(upstream(), '/extended/v2/blocks/abc');
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-api-version')).toBeNull();
    expect(invalid.headers.get('cache-control')).toBeNull();
    const latest = await get(upstream(), '/extended/v2/blocks/latest');
    expect(latest.headers.get('x-api-version')).toBe('v8.13.6 (fake)');
    expect(latest.headers.get('warning')).toBeNull();
    const tx = await get(upstream(), `/extended/v1/tx/${TX_ID}`);
    expect(tx.headers.get('warning')).toBe('299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"');
  });

  it('answers unknown routes like Fastify, with no-store', async () => {
    const answer = await get(upstream(), '/extended/v9/nothing');
    expect(answer.status).toBe(404);
    expect(answer.body).toBe('{"message":"Route GET:/extended/v9/nothing not found","error":"Not Found","statusCode":404}');
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('redirects a tx id without 0x, keeping the query, with the tx ETag', async () => {
    const answer = await get(upstream(), `/extended/v1/tx/${TX_ID.slice(2)}?event_limit=5`);
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe(`/extended/v1/tx/${TX_ID}?event_limit=5`);
    expect(answer.headers.get('etag')).toBe(findRecording(`/extended/v1/tx/${TX_ID}`)?.headers.etag);
  });

  it('serves the closest recording for unrecorded query variants, empty pages for unknown resources', async () => {
    const path = `/extended/v1/contract/${RECORDED.contractId}/events`;
    expect((await get(upstream(), `${path}?limit=7&unknown=1`)).body).toBe(findRecording(path)?.body);
    const unknownTx = await getJson(upstream(), `/extended/v1/tx/events?tx_id=${RECORDED.unknownTxId}&limit=3`);
    expect(unknownTx).toEqual({ limit: 3, offset: 0, events: [] });
  });

  it('answers an unrecorded principal like one without activity', async () => {
    const answer = await get(upstream(), '/extended/v1/address/ST3J2GVMMM2R07ZFBJDWTYEYAR8FZH5WKDTFJ9AHA/stx');
    const inactive = findRecording(`/extended/v1/address/${RECORDED.principalWithoutTxs}/stx`);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(inactive?.body);
    expect(answer.headers.get('etag')).toBeNull();
  });

  it('stands in for the core node: /v2/info and POST /v2/transactions', async () => {
    const info = await getJson(upstream(), '/v2/info');
    expect(info.stacks_tip_height).toBe(RECORDED.tipHeight);
    const res = await fetch(`${upstream().url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array([1, 2, 3]),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toBe('0x039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81');
  });

  it('answers HEAD like GET without a body', async () => {
    const res = await fetch(`${upstream().url}/extended`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${RECORDED.tipIndexHash}"`);
    expect(await res.text()).toBe('');
  });
});

describe('RECORDED', () => {
  it('names values that hold in the recordings', () => {
    const status = JSON.parse(findRecording('/extended')?.body ?? '{}') as { chain_tip: Record<string, unknown> };
    expect(status.chain_tip).toMatchObject({
      block_height: RECORDED.tipHeight,
      index_block_hash: RECORDED.tipIndexHash,
      block_hash: RECORDED.tipBlockHash,
      burn_block_height: RECORDED.tipBurnHeight,
    });
    expect(findRecording('/extended/v2/mempool/fees')?.headers.etag).toBe(`"${RECORDED.mempoolEtag}"`);
    expect(findRecording(`/extended/v1/tx/${RECORDED.pendingTxId}`)?.body).toContain('"tx_status":"pending"');
    expect(findRecording(`/extended/v1/tx/${RECORDED.confirmedTxId}`)?.body).toContain(`"block_height":${RECORDED.confirmedTxHeight},`);
    expect(findRecording(`/extended/v1/tx/${RECORDED.unknownTxId}`)?.status).toBe(404);
    expect(findRecording(`/extended/v1/address/${RECORDED.principal}/transactions`)?.body).toContain('"total":24');
    expect(findRecording(`/extended/v1/address/${RECORDED.principalWithoutTxs}/stx`)?.headers.etag).toBeUndefined();
    expect(findRecording(`/extended/v1/contract/${RECORDED.contractId}/events`)?.body).toContain('"results":[{');
    expect(findRecording(`/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`)?.body).toContain(
      `"height":${RECORDED.burnHeightWithBlockHeight},`,
    );
    expect(findRecording(`/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithoutBlock}`)?.status).toBe(404);
  });
});

describe('fake upstream simulating time', () => {
  const upstream = useFakeUpstream();

  it('advanceTip moves /extended, blocks/latest, chain-tip ETags and burn heights', async () => {
    const before = upstream().tip();
    const eventsPath = `/extended/v1/contract/${RECORDED.contractId}/events`;
    const oldEventsEtag = await etagOf(upstream(), eventsPath);
    upstream().advanceTip();
    const tip = upstream().tip();
    expect(tip.height).toBe(before.height + 1);
    expect(tip.burn_block_height).toBe(before.burn_block_height + 1);

    const status = await get(upstream(), '/extended', { 'if-none-match': `"${before.index_block_hash}"` });
    expect(status.status).toBe(200);
    expect(status.headers.get('etag')).toBe(`"${tip.index_block_hash}"`);
    expect(JSON.parse(status.body).chain_tip).toEqual({
      block_height: tip.height,
      block_hash: tip.block_hash,
      index_block_hash: tip.index_block_hash,
      burn_block_height: tip.burn_block_height,
    });

    const latest = await get(upstream(), '/extended/v2/blocks/latest');
    expect(latest.headers.get('etag')).toBe(`"${tip.index_block_hash}:true"`);
    const block = JSON.parse(latest.body) as Record<string, unknown>;
    expect(block).toMatchObject({ height: tip.height, parent_index_block_hash: before.index_block_hash });
    expect(Object.keys(block)).toEqual(Object.keys(await getJson(upstream(), '/extended/v2/blocks/1')));
    expect((await get(upstream(), `/extended/v2/blocks/${tip.height}`)).body).toBe(latest.body);

    const legacy = await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${tip.burn_block_height}`);
    expect(legacy).toMatchObject({ canonical: true, height: tip.height, txs: [] });
    expect(await etagOf(upstream(), eventsPath)).toBe(`"${tip.index_block_hash}"`);
    expect(oldEventsEtag).toBe(`"${before.index_block_hash}"`);
  });

  it('changes principal ETags with the tip', async () => {
    const path = `/extended/v1/address/${RECORDED.principal}/transactions`;
    const before = await etagOf(upstream(), path);
    upstream().advanceTip(2);
    const after = await etagOf(upstream(), path);
    // A hash the fake derives from the recorded ETag and the tip: what matters is that it moved.
    expect(after).toMatch(/^"[0-9a-f]{64}"$/);
    expect(after).not.toBe(before);
  });

  it('reorg builds a longer fork that does not extend the old tip and orphans the old blocks', async () => {
    const old = upstream().tip();
    const oldParent = await getJson(upstream(), `/extended/v2/blocks/${old.height - 1}`);
    upstream().reorg(2);
    const tip = upstream().tip();
    expect(tip.height).toBe(old.height + 1);
    const latest = await getJson(upstream(), '/extended/v2/blocks/latest');
    expect(latest.parent_index_block_hash).not.toBe(old.index_block_hash);
    expect(latest.parent_index_block_hash).toBe((await getJson(upstream(), `/extended/v2/blocks/${old.height}`)).index_block_hash);
    // The fork point is two blocks down: the block at old.height - 1 was replaced too.
    const replaced = await getJson(upstream(), `/extended/v2/blocks/${old.height - 1}`);
    expect(replaced.index_block_hash).not.toBe(oldParent.index_block_hash);
    expect(replaced.parent_index_block_hash).toBe(oldParent.parent_index_block_hash);
    expect((await get(upstream(), `/extended/v2/blocks/${old.index_block_hash}`)).status).toBe(404);
    // No canonical block is left at the old tip's burn height: the upstream then shows the orphan.
    const orphan = await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${old.burn_block_height}`);
    expect(orphan).toMatchObject({ canonical: false, index_block_hash: old.index_block_hash });
  });

  it('reorg re-mines the orphaned txs into the new fork, which changes their ETag', async () => {
    const lastRecorded = await getJson<{ txs: string[] }>(upstream(), `/extended/v1/block/by_burn_block_height/${RECORDED.tipBurnHeight}`);
    const txId = lastRecorded.txs[0] ?? '';
    const before = await get(upstream(), `/extended/v1/tx/${txId}`);
    const depth = upstream().tip().height - RECORDED.tipHeight + 1;
    upstream().reorg(depth);
    const after = await get(upstream(), `/extended/v1/tx/${txId}`);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    const moved = JSON.parse(after.body) as Record<string, unknown>;
    const block = await getJson(upstream(), `/extended/v2/blocks/${RECORDED.tipHeight}`);
    expect(moved).toMatchObject({ block_hash: block.hash, block_height: RECORDED.tipHeight, canonical: true });
    expect(Object.keys(moved)).toEqual(Object.keys(JSON.parse(before.body) as object));
  });

  it('addPendingTx then confirmTx flips /tx/<id> from pending to success and moves the mempool ETag', async () => {
    const fees = '/extended/v2/mempool/fees';
    const mempoolBefore = await etagOf(upstream(), fees);
    const id = upstream().addPendingTx();
    const mempoolPending = await etagOf(upstream(), fees);
    expect(mempoolPending).toBe(laterMempoolEtag(mempoolBefore, 1));

    const pending = await get(upstream(), `/extended/v1/tx/${id}`);
    expect(JSON.parse(pending.body)).toMatchObject({ tx_id: id, tx_status: 'pending', tx_type: 'token_transfer' });

    upstream().confirmTx(id);
    const tip = upstream().tip();
    const mined = await get(upstream(), `/extended/v1/tx/${id}`);
    expect(JSON.parse(mined.body)).toMatchObject({
      tx_id: id,
      tx_status: 'success',
      canonical: true,
      block_height: tip.height,
      block_hash: tip.block_hash,
    });
    expect(mined.headers.get('etag')).not.toBe(pending.headers.get('etag'));
    expect(await etagOf(upstream(), fees)).toBe(laterMempoolEtag(mempoolPending, 1));

    const legacy = await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${tip.burn_block_height}`);
    expect(legacy.txs).toEqual([id]);
    const multiple = await getJson(upstream(), `/extended/v1/tx/multiple?tx_id=${id}&tx_id=${RECORDED.pendingTxId}`);
    expect(Object.keys(multiple)).toEqual([id, RECORDED.pendingTxId]);
  });

  it('gives a confirmed tx the key order of the recorded mined token transfers', async () => {
    upstream().confirmTx(RECORDED.pendingTxId);
    const mined = await getJson(upstream(), `/extended/v1/tx/${RECORDED.pendingTxId}`);
    expect(Object.keys(mined)).toEqual(Object.keys(await getJson(upstream(), `/extended/v1/tx/${TX_ID}`)));
  });

  it('setMempoolChanged moves only the mempool ETag', async () => {
    const tip = await etagOf(upstream(), '/extended');
    const mempool = await etagOf(upstream(), '/extended/v1/tx/mempool/stats');
    upstream().setMempoolChanged();
    expect(await etagOf(upstream(), '/extended')).toBe(tip);
    const next = await etagOf(upstream(), '/extended/v1/tx/mempool/stats');
    expect(next).toMatch(/^"\d+\.\d{6}"$/);
    expect(next).toBe(laterMempoolEtag(mempool, 1));
  });
});

describe('fake upstream with a burn chain of its own (upstream-contract §5)', () => {
  const upstream = useFreshFakeUpstream();
  const statusTip = async (headers: Record<string, string> = {}) => get(upstream(), '/extended', headers);
  const burnTipOf = async () => (JSON.parse((await statusTip()).body) as { chain_tip: { burn_block_height: number } }).chain_tip.burn_block_height;
  const byBurn = (height: number) => get(upstream(), `/extended/v1/block/by_burn_block_height/${height}`);

  it('advanceBurn moves the burn tip alone: /extended and /v2/info say it, the ETag and the tip block stay, by_burn_block_height answers 404', async () => {
    const before = upstream().tip();
    const latestBefore = await get(upstream(), '/extended/v2/blocks/latest');
    upstream().advanceBurn(3);
    const tip = upstream().tip();
    expect(tip).toEqual({ ...before, burn_tip_height: before.burn_block_height + 3 });
    expect(await burnTipOf()).toBe(before.burn_block_height + 3);
    expect((await getJson(upstream(), '/v2/info')).burn_block_height).toBe(before.burn_block_height + 3);
    // The status ETag is the tip's index_block_hash only: a conditional poll cannot see it (#2664).
    expect((await statusTip({ 'if-none-match': `"${before.index_block_hash}"` })).status).toBe(304);
    expect((await get(upstream(), '/extended/v2/blocks/latest')).body).toBe(latestBefore.body);
    for (let h = before.burn_block_height + 1; h <= before.burn_block_height + 3; h++) expect((await byBurn(h)).status).toBe(404);
    expect((await byBurn(before.burn_block_height)).status).toBe(200);
  });

  it('a burn block announced before its tenure: the next block opens the tenure in it, and the two heights meet again', async () => {
    const before = upstream().tip();
    upstream().advanceBurn(1);
    expect(upstream().tip()).toMatchObject({ burn_block_height: before.burn_block_height, burn_tip_height: before.burn_block_height + 1 });
    upstream().advanceTip();
    const block = await getJson(upstream(), '/extended/v2/blocks/latest');
    const parent = await getJson(upstream(), `/extended/v2/blocks/${before.height}`);
    expect(block).toMatchObject({
      height: before.height + 1,
      burn_block_height: before.burn_block_height + 1,
      tenure_height: Number(parent.tenure_height) + 1,
    });
    expect(block.burn_block_hash).not.toBe(parent.burn_block_hash);
    expect(await burnTipOf()).toBe(before.burn_block_height + 1);
    expect(await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${before.burn_block_height + 1}`)).toMatchObject({ height: before.height + 1 });
    // After a stall of several burn blocks the new tenure is anchored in the newest one.
    upstream().advanceBurn(5);
    upstream().advanceTip();
    expect(upstream().tip()).toMatchObject({ burn_block_height: before.burn_block_height + 6, burn_tip_height: before.burn_block_height + 6 });
    expect((await byBurn(before.burn_block_height + 3)).status).toBe(404);
  });

  it("blocks in the tip's tenure share its burn block and tenure_height; by_burn_block_height answers the highest", async () => {
    upstream().advanceTip();
    const first = await getJson(upstream(), '/extended/v2/blocks/latest');
    upstream().advanceTip(2, { tenure: 'same' });
    const tip = upstream().tip();
    expect(tip).toMatchObject({ height: Number(first.height) + 2, burn_block_height: first.burn_block_height, burn_tip_height: first.burn_block_height });
    const last = await getJson(upstream(), '/extended/v2/blocks/latest');
    for (const key of ['burn_block_height', 'burn_block_hash', 'burn_block_time', 'tenure_height']) expect(last[key]).toBe(first[key]);
    expect(await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${tip.burn_block_height}`)).toMatchObject({
      height: tip.height,
      canonical: true,
    });
    // A new tenure after them: a new burn block.
    upstream().advanceTip();
    expect(upstream().tip()).toMatchObject({ height: tip.height + 1, burn_block_height: tip.burn_block_height + 1 });
  });

  it('mineOrphan: a lost block at a new burn height, seen only by by_burn_block_height; the tip stays and the next tenure is one burn block higher', async () => {
    const before = upstream().tip();
    const orphan = upstream().mineOrphan();
    expect(orphan).toMatchObject({ height: before.height + 1, burn_block_height: before.burn_block_height + 1 });
    expect(upstream().tip()).toEqual({ ...before, burn_tip_height: before.burn_block_height + 1 });
    expect((await statusTip({ 'if-none-match': `"${before.index_block_hash}"` })).status).toBe(304);
    expect(await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${orphan.burn_block_height}`)).toMatchObject({
      canonical: false,
      height: orphan.height,
      index_block_hash: orphan.index_block_hash,
    });
    expect((await get(upstream(), `/extended/v2/blocks/${orphan.index_block_hash}`)).status).toBe(404);
    expect((await get(upstream(), `/extended/v2/blocks/${orphan.height}`)).status).toBe(404);
    upstream().advanceTip();
    expect(upstream().tip()).toMatchObject({ height: before.height + 1, burn_block_height: before.burn_block_height + 2 });
    expect((await getJson(upstream(), '/extended/v2/blocks/latest')).parent_index_block_hash).toBe(before.index_block_hash);
  });

  it('reorg still orphans the last blocks at their burn heights, over tenures of several blocks and a burn tip ahead', async () => {
    upstream().advanceTip();
    upstream().advanceTip(2, { tenure: 'same' });
    upstream().advanceBurn(2);
    const old = upstream().tip();
    upstream().reorg(2);
    const tip = upstream().tip();
    expect(tip.height).toBe(old.height + 1);
    // The fork's first tenure opens in the newest burn block, which no block had yet.
    const forkFirst = await getJson(upstream(), `/extended/v2/blocks/${old.height - 1}`);
    expect(forkFirst).toMatchObject({ canonical: true, burn_block_height: old.burn_tip_height });
    expect(tip.burn_tip_height).toBe(tip.burn_block_height);
    // The orphans' burn height keeps the tenure's first block, still canonical and now the highest there.
    expect(await getJson(upstream(), `/extended/v1/block/by_burn_block_height/${old.burn_block_height}`)).toMatchObject({
      canonical: true,
      height: old.height - 2,
    });
  });

  it('a tx a reorg moved is named in its new block by the replayed bodies that embed it (with_transfers, address lists); untouched before', async () => {
    const lastRecorded = await getJson<{ txs: string[] }>(upstream(), `/extended/v1/block/by_burn_block_height/${RECORDED.tipBurnHeight}`);
    const txId = lastRecorded.txs[0] ?? '';
    const withTransfers = `/extended/v1/address/${RECORDED.principal}/${txId}/with_transfers`;
    const recorded = findRecording(withTransfers);
    expect(recorded?.status).toBe(200);
    expect((await get(upstream(), withTransfers)).body).toBe(recorded?.body);
    upstream().reorg(1);
    const moved = await getJson(upstream(), `/extended/v1/tx/${txId}`);
    const relocated = await getJson<{ tx: Record<string, unknown> }>(upstream(), withTransfers);
    expect(relocated.tx).toMatchObject({ block_hash: moved.block_hash, block_height: RECORDED.tipHeight, burn_block_height: moved.burn_block_height });
    expect(Object.keys(relocated.tx)).toEqual(Object.keys((JSON.parse(recorded?.body ?? '{}') as { tx: object }).tx));
    expect(relocated.tx.block_hash).not.toBe(RECORDED.tipBlockHash);
  });

  it('jumpTip reports the burn tip (not the anchor) plus the jump', async () => {
    const before = upstream().tip();
    upstream().advanceBurn(4);
    upstream().jumpTip(3);
    expect(await burnTipOf()).toBe(before.burn_block_height + 4 + 3);
    upstream().jumpTip(0);
    expect(await burnTipOf()).toBe(before.burn_block_height + 4);
  });
});

describe('fake upstream with exact principal ETags', () => {
  let up: FakeUpstream | undefined;
  const fake = () => up as FakeUpstream;
  beforeAll(async () => {
    up = await startFakeUpstream({ principalEtags: 'exact' });
  });
  afterAll(async () => {
    await up?.close();
  });
  const history = `/extended/v1/address/${RECORDED.principal}/transactions`;
  const balance = `/extended/v1/address/${RECORDED.principal}/stx`;
  const otherHistory = '/extended/v1/address/ST000000000000000000002AMW42H/transactions';

  it('keeps a principal ETag across blocks and mempool changes that do not involve the principal', async () => {
    const before = await Promise.all([history, balance, otherHistory].map((p) => etagOf(fake(), p)));
    fake().advanceTip(2);
    fake().setMempoolChanged();
    expect(await Promise.all([history, balance, otherHistory].map((p) => etagOf(fake(), p)))).toEqual(before);
  });

  it('moves the principal_mempool ETag when the principal sends a pending tx, and both once it is mined', async () => {
    const [historyBefore, balanceBefore, otherBefore] = await Promise.all([history, balance, otherHistory].map((p) => etagOf(fake(), p)));
    const id = fake().addPendingTx(); // sent by RECORDED.principal
    expect(await etagOf(fake(), history)).toBe(historyBefore);
    const balancePending = await etagOf(fake(), balance);
    expect(balancePending).not.toBe(balanceBefore);
    fake().confirmTx(id);
    expect(await etagOf(fake(), history)).not.toBe(historyBefore);
    expect(await etagOf(fake(), balance)).not.toBe(balancePending);
    expect(await etagOf(fake(), otherHistory)).toBe(otherBefore);
  });

  it('moves every principal ETag on a reorg', async () => {
    const before = await etagOf(fake(), otherHistory);
    fake().reorg(1);
    expect(await etagOf(fake(), otherHistory)).not.toBe(before);
  });
});

describe('fake upstream faults and counting', () => {
  const upstream = useFakeUpstream();

  it('counts requests by path, url, RegExp and predicate, and resets', async () => {
    upstream().resetCounts();
    await get(upstream(), '/extended');
    await get(upstream(), '/extended/v1/tx/mempool/stats?foo=bar');
    await get(upstream(), '/extended/v1/tx/mempool/stats');
    expect(upstream().count()).toBe(3);
    expect(upstream().count('/extended')).toBe(1);
    expect(upstream().count('/extended/v1/tx/mempool/stats')).toBe(2);
    expect(upstream().count('/extended/v1/tx/mempool/stats?foo=bar')).toBe(1);
    expect(upstream().count(/stats\?/)).toBe(1);
    expect(upstream().count((r) => r.method === 'GET')).toBe(3);
    expect(upstream().requests[0]).toMatchObject({ method: 'GET', url: '/extended', path: '/extended' });
    upstream().resetCounts();
    expect(upstream().count()).toBe(0);
  });

  it('failNext fails the next n matching requests, counting them', async () => {
    upstream().resetCounts();
    upstream().failNext(2, { status: 503 }, /\/extended$/);
    expect((await get(upstream(), '/extended/v2/blocks/latest')).status).toBe(200);
    const failed = await get(upstream(), '/extended');
    expect(failed.status).toBe(503);
    expect(JSON.parse(failed.body)).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    expect((await get(upstream(), '/extended')).status).toBe(503);
    expect((await get(upstream(), '/extended')).status).toBe(200);
    expect(upstream().count('/extended')).toBe(3);
  });

  it('failNext with a body answers that body', async () => {
    upstream().failNext(1, { status: 500, body: 'boom' });
    const answer = await get(upstream(), '/extended');
    expect(answer).toMatchObject({ status: 500, body: 'boom' });
  });

  it("failNext 'reset' destroys the connection and 'garbage' sends unparsable JSON", async () => {
    upstream().failNext(1, 'reset');
    await expect(fetch(`${upstream().url}/extended`)).rejects.toThrow();
    upstream().failNext(1, 'garbage');
    const res = await fetch(`${upstream().url}/extended`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    await expect(res.json()).rejects.toThrow();
  });

  it('failNext with headers adds or replaces the JSON defaults (429 with Retry-After, an HTML page, a bare 304)', async () => {
    upstream().failNext(1, { status: 429, headers: { 'retry-after': '7' } });
    const limited = await get(upstream(), '/extended');
    expect(limited).toMatchObject({ status: 429 });
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(JSON.parse(limited.body)).toEqual({ statusCode: 429, error: 'Too Many Requests', message: 'Injected failure' });
    upstream().failNext(1, { status: 200, body: '<html></html>', headers: { 'content-type': 'text/html' } });
    const html = await get(upstream(), '/extended');
    expect(html).toMatchObject({ status: 200, body: '<html></html>' });
    expect(html.headers.get('content-type')).toBe('text/html');
    upstream().failNext(1, { status: 304 });
    expect(await get(upstream(), '/extended')).toMatchObject({ status: 304, body: '' });
  });

  it("failNext 'stall-body' sends headers and part of the body, then nothing", async () => {
    upstream().failNext(1, 'stall-body');
    const res = await fetch(`${upstream().url}/extended`, { signal: AbortSignal.timeout(300) });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect((await get(upstream(), '/extended')).status).toBe(200);
  });

  it("failNext 'hang' never answers", async () => {
    upstream().failNext(1, 'hang');
    await expect(fetch(`${upstream().url}/extended`, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    expect((await get(upstream(), '/extended')).status).toBe(200);
  });

  it('setFailing fails matching requests until cleared', async () => {
    upstream().setFailing({ status: 502 }, /\/blocks\//);
    expect((await get(upstream(), '/extended/v2/blocks/latest')).status).toBe(502);
    expect((await get(upstream(), '/extended/v2/blocks/1')).status).toBe(502);
    expect((await get(upstream(), '/extended')).status).toBe(200);
    upstream().setFailing(null);
    expect((await get(upstream(), '/extended/v2/blocks/latest')).status).toBe(200);
  });

  it('setDelay delays matching answers only', async () => {
    upstream().setDelay(150, /\/extended$/);
    const started = Date.now();
    const finished: string[] = [];
    await Promise.all([
      get(upstream(), '/extended').then(() => finished.push('delayed')),
      get(upstream(), '/extended/v2/blocks/latest').then(() => finished.push('other')),
    ]);
    // A bound, not a value: the delay makes the answer at least this late, the machine decides how much later.
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(finished).toEqual(['other', 'delayed']);
    upstream().setDelay(0);
  });

  it('echoes WebSocket text messages on /extended/v1/ws and /socket.io/, recording the upgrades', async () => {
    upstream().resetCounts();
    for (const path of ['/extended/v1/ws', '/socket.io/?EIO=4&transport=websocket']) {
      const ws = new WebSocket(`${upstream().url.replace('http', 'ws')}${path}`);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve(data.toString())));
      ws.send('{"jsonrpc":"2.0","method":"subscribe"}');
      expect(await reply).toBe('echo:{"jsonrpc":"2.0","method":"subscribe"}');
      ws.close();
    }
    expect(upstream().count((r) => r.method === 'UPGRADE')).toBe(2);
    expect(upstream().count('/extended/v1/ws')).toBe(1);
  });
});

describe('fake upstream close()', () => {
  it('resolves with hanging requests, keep-alive sockets and open WebSockets, and frees the port', async () => {
    const up = await startFakeUpstream();
    await get(up, '/extended'); // leaves a keep-alive connection open
    const ws = new WebSocket(`${up.url.replace('http', 'ws')}/extended/v1/ws`);
    await new Promise((resolve) => ws.once('open', resolve));
    const wsClosed = new Promise((resolve) => ws.once('close', resolve));
    up.failNext(1, 'hang');
    const hanging = fetch(`${up.url}/extended`).catch((error: unknown) => error);
    await expect.poll(() => up.count()).toBe(3);
    up.setDelay(10_000);
    const delayed = fetch(`${up.url}/extended`).catch((error: unknown) => error);
    await expect.poll(() => up.count()).toBe(4);

    await up.close();
    expect(await hanging).toBeInstanceOf(Error);
    expect(await delayed).toBeInstanceOf(Error);
    await wsClosed;
    await expect(fetch(`${up.url}/extended`)).rejects.toThrow();
  });

  it('listens on the requested port', async () => {
    const probe = await startFakeUpstream();
    const port = probe.port;
    await probe.close();
    const up = await startFakeUpstream({ port });
    expect(up.url).toBe(`http://127.0.0.1:${port}`);
    await up.close();
  });
});
