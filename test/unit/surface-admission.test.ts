/**
 * Admission for the wider read surface: what each family stores, under which class, and what it
 * passes on as the upstream answered; nothing final without evidence (raw bytes that hash to the
 * txid, a final deploy, a final pinned block).
 */
import { makeSTXTokenTransfer, randomPrivateKey } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/cache/admit.js';
import type { CacheEntry } from '../../src/cache/entry.js';
import type { UpstreamResponse } from '../../src/upstream/client.js';
import { admitSurface, confirmSurface, rawTxMatches, type SurfaceFacts } from '../../src/surface/admit-surface.js';
import { blockEvidenceOf, deployEvidenceOf, deployTxIdOf } from '../../src/surface/evidence.js';
import { FAMILIES, FAMILY_BY_ID } from '../../src/surface/families.js';
import { isTipKeyed, matchSurface } from '../../src/surface/plan.js';
import { planOf, surfaceSpec, type SurfaceEvidence } from '../../src/surface/surface-spec.js';

const ADDRESS = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const asked: Snapshot = { chain: { tipHash: '0xt1', tipHeight: 100, burnHeight: 50, finalStacksHeight: 90, reorgs: [] }, at: 1_000 };
const WARNING = '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';

function answer(status: number, body: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { upstream: 'http://up', status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: Buffer.from(text) };
}

function factsFor(method: string, path: string, query = ''): SurfaceFacts {
  const match = matchSurface(method, path, query);
  if (!match) throw new Error(`no family for ${path}`);
  return planOf(match, query ? `${path}?${query}` : path, query).facts;
}

const entryOf = (admission: ReturnType<typeof admitSurface>): CacheEntry => {
  if (admission.kind !== 'entry') throw new Error(`expected an entry, got ${admission.kind}`);
  return admission.entry;
};

async function signedTransfer(): Promise<{ txid: string; hex: string }> {
  const tx = await makeSTXTokenTransfer({ recipient: ADDRESS, amount: 1000n, senderKey: randomPrivateKey(), network: 'testnet', nonce: 0n, fee: 200n });
  return { txid: tx.txid(), hex: tx.serialize() };
}

describe('admitSurface', () => {
  it('stores a 200 of an ETag family under its class, with the strong ETag, the Warning and the principal', () => {
    const facts = factsFor('GET', `/extended/v1/address/${ADDRESS}/transactions_with_transfers`);
    const entry = entryOf(admitSurface(facts, answer(200, { results: [] }, { etag: '"abc"', warning: WARNING }), asked));
    expect(entry).toMatchObject({ status: 200, cls: 'tip', upstreamEtag: '"abc"', etag: '"abc"', tipHash: '0xt1', principal: ADDRESS, validatedAt: 1_000 });
    expect(entry.headers.warning).toBe(WARNING);

    const nonces = entryOf(
      admitSurface(factsFor('GET', `/extended/v1/address/${ADDRESS}/nonces`), answer(200, { possible_next_nonce: 3 }, { etag: '"n"' }), asked),
    );
    expect(nonces.cls).toBe('mempool');
    expect(nonces.principal).toBe(ADDRESS);
    const mempool = entryOf(admitSurface(factsFor('GET', '/extended/v1/tx/mempool', `address=${ADDRESS}`), answer(200, { results: [] }), asked));
    expect(mempool).toMatchObject({ cls: 'mempool', principal: ADDRESS });
  });

  it('keys node RPC answers by tip (class tip), with an ETag of the body when the upstream sends none', () => {
    const entry = entryOf(admitSurface(factsFor('GET', `/v2/accounts/${ADDRESS}`, 'proof=0'), answer(200, { balance: '0x0', nonce: 1 }), asked));
    expect(entry.cls).toBe('tip');
    expect(entry.upstreamEtag).toBeUndefined();
    expect(entry.etag).toMatch(/^"/);
  });

  it('marks an STX balance with nothing locked as moving with transactions only (no PoX unlock can change it), a locked one not', () => {
    const v2 = factsFor('GET', `/extended/v2/addresses/${ADDRESS}/balances/stx`);
    const unlocked = { balance: '100', total_sent: '0', total_received: '100', locked: '0', lock_height: 0, burnchain_unlock_height: 0 };
    expect(entryOf(admitSurface(v2, answer(200, unlocked, { etag: '"p"' }), asked)).movesWith).toBe('transactions');
    const locked = { ...unlocked, locked: '50', lock_height: 80, burnchain_unlock_height: 120 };
    expect(entryOf(admitSurface(v2, answer(200, locked, { etag: '"p"' }), asked)).movesWith).toBeUndefined();
    // Unlocked now but an unlock height still set (the upstream's view of a lock just ended): not known to be unlocked.
    expect(entryOf(admitSurface(v2, answer(200, { ...unlocked, burnchain_unlock_height: 120 }, { etag: '"p"' }), asked)).movesWith).toBeUndefined();

    const node = factsFor('GET', `/v2/accounts/${ADDRESS}`, 'proof=0');
    const account = { balance: '0x00000000000000000000000000000064', locked: '0x00000000000000000000000000000000', unlock_height: 0, nonce: 3 };
    expect(entryOf(admitSurface(node, answer(200, account), asked)).movesWith).toBe('transactions');
    const lockedAccount = { ...account, locked: '0x00000000000000000000000000000032', unlock_height: 120 };
    expect(entryOf(admitSurface(node, answer(200, lockedAccount), asked)).movesWith).toBeUndefined();
    // A shape without the lock fields is not known to be unlocked.
    expect(entryOf(admitSurface(node, answer(200, { balance: '0x0', nonce: 1 }), asked)).movesWith).toBeUndefined();
  });

  it('marks token balances as moving with token events only (they name the principal; no STX transfer or PoX state moves them)', () => {
    const ft = factsFor('GET', `/extended/v2/addresses/${ADDRESS}/balances/ft`);
    expect(entryOf(admitSurface(ft, answer(200, { results: [] }, { etag: '"p"' }), asked)).movesWith).toBe('token_events');
  });

  it('marks nonces as moving with what the principal sends, and the mempool lists with what the upstream files under it', () => {
    const admitted = (path: string, query = '') => entryOf(admitSurface(factsFor('GET', path, query), answer(200, { results: [] }, { etag: '"e"' }), asked));
    expect(admitted(`/extended/v1/address/${ADDRESS}/nonces`).movesWith).toBe('sent_transactions');
    expect(admitted(`/extended/v3/principals/${ADDRESS}/nonces`).movesWith).toBe('sent_transactions');
    expect(admitted('/extended/v1/tx/mempool', `address=${ADDRESS}&limit=50`)).toMatchObject({ principal: ADDRESS, movesWith: 'listed_transactions' });
    expect(admitted(`/extended/v1/address/${ADDRESS}/mempool`)).toMatchObject({ principal: ADDRESS, movesWith: 'listed_transactions' });
    expect(admitted(`/extended/v3/principals/${ADDRESS}/mempool/transactions`)).toMatchObject({ principal: ADDRESS, movesWith: 'listed_transactions' });
  });

  it('tags the v3 mempool list with no principal, ?address= or not: the upstream ignores the parameter there and lists the whole mempool', () => {
    expect(factsFor('GET', '/extended/v3/mempool/transactions', `address=${ADDRESS}`).principal).toBeUndefined();
    const entry = entryOf(admitSurface(factsFor('GET', '/extended/v3/mempool/transactions', `address=${ADDRESS}`), answer(200, { results: [] }), asked));
    expect(entry.principal).toBeUndefined();
    expect(entry.movesWith).toBeUndefined();
  });

  it("never revalidates a mempool answer with a chain-tip ETag (the v3 mempool list's): the mempool moves without it, so a 304 would confirm an old list", () => {
    const tipEtag = `"0x${'ab'.repeat(32)}"`;
    const v3 = entryOf(admitSurface(factsFor('GET', '/extended/v3/mempool/transactions', 'limit=20'), answer(200, { results: [] }, { etag: tipEtag }), asked));
    expect(v3).toMatchObject({ cls: 'mempool', etag: tipEtag });
    expect(v3.upstreamEtag).toBeUndefined();
    // The upstream's own mempool ETag (a timestamp) is revalidated with, and a chain-tip ETag on a chain-tip family too.
    const v1 = entryOf(
      admitSurface(factsFor('GET', '/extended/v1/tx/mempool', 'limit=20'), answer(200, { results: [] }, { etag: '"1755721234.567891"' }), asked),
    );
    expect(v1.upstreamEtag).toBe('"1755721234.567891"');
    const blocks = entryOf(admitSurface(factsFor('GET', '/extended/v2/blocks', 'limit=10'), answer(200, { results: [] }, { etag: tipEtag }), asked));
    expect(blocks.upstreamEtag).toBe(tipEtag);
  });

  it('stores search answers as mempool class (a transaction found in the mempool can change without a new tip), keyed by the tip', () => {
    const facts = factsFor('GET', `/extended/v1/search/0x${'ab'.repeat(32)}`);
    const found = { found: true, result: { entity_id: `0x${'ab'.repeat(32)}`, entity_type: 'mempool_tx_id' } };
    expect(entryOf(admitSurface(facts, answer(200, found), asked)).cls).toBe('mempool');
    expect(isTipKeyed(facts.family, '')).toBe(true);
    // A 304-free family: a confirmation keeps the class it was stored under.
    const stored = entryOf(admitSurface(facts, answer(200, found), asked));
    const confirmed = confirmSurface(facts, stored, { ...asked, at: 2_000 });
    expect(confirmed.kind === 'entry' && confirmed.entry.cls).toBe('mempool');
  });

  it('stores v2 balances/stx as tip class only without include_mempool (the upstream adds mempool fields only with it)', () => {
    const plain = factsFor('GET', `/extended/v2/addresses/${ADDRESS}/balances/stx`);
    expect(plain.family.id).toBe('balances_stx');
    expect(entryOf(admitSurface(plain, answer(200, { balance: '10' }, { etag: '"p"' }), asked))).toMatchObject({ cls: 'tip', principal: ADDRESS });
    for (const query of ['include_mempool=true', 'include_mempool=false', 'include_mempool']) {
      const pending = factsFor('GET', `/extended/v2/addresses/${ADDRESS}/balances/stx`, query);
      expect(pending.family.id, query).toBe('balances_stx_pending');
      expect(entryOf(admitSurface(pending, answer(200, { balance: '10', estimated_balance: '9' }, { etag: '"pm"' }), asked)).cls, query).toBe('mempool');
    }
  });

  it('never stores a family whose answers read the mempool as tip class', () => {
    for (const family of FAMILIES) {
      const readsMempool = family.mempoolDependent === true || family.change === 'etag:mempool' || family.change === 'etag:principal_mempool';
      if (!readsMempool) continue;
      const facts: SurfaceFacts = { family, params: {}, finalizable: false };
      const admitted = admitSurface(facts, answer(200, { results: [] }), asked);
      expect(admitted.kind === 'entry' && admitted.entry.cls, family.id).toBe('mempool');
    }
  });

  it('stores a 404 briefly only where a later block can create the thing, and a 410 as mempool class', () => {
    expect(
      entryOf(admitSurface(factsFor('GET', `/v2/contracts/interface/${ADDRESS}/c`), answer(404, 'no such contract', { 'content-type': 'text/plain' }), asked))
        .cls,
    ).toBe('tip');
    expect(admitSurface(factsFor('GET', `/extended/v1/address/${ADDRESS}/nonces`), answer(404, { error: 'x' }), asked).kind).toBe('pass-on');
    const gone = entryOf(admitSurface(factsFor('GET', `/extended/v1/address/${ADDRESS}/nonces`), answer(410, { error: 'Gone' }, { warning: WARNING }), asked));
    expect(gone).toMatchObject({ status: 410, cls: 'mempool' });
    expect(gone.headers.warning).toBe(WARNING);
  });

  it("passes on every other status with the upstream's body", () => {
    for (const status of [400, 401, 403, 429, 500, 501]) {
      const admission = admitSurface(
        factsFor('POST', `/v2/contracts/call-read/${ADDRESS}/c/f`),
        answer(status, 'refused', { 'content-type': 'text/plain' }),
        asked,
      );
      expect(admission.kind).toBe('pass-on');
      if (admission.kind === 'pass-on') expect(admission.passed).toMatchObject({ status, body: Buffer.from('refused') });
    }
  });

  it('fails an answer that says JSON and is not (retried elsewhere, never stored)', () => {
    expect(admitSurface(factsFor('GET', '/extended/v2/blocks'), answer(200, '{"results":['), asked).kind).toBe('failure');
  });

  it('stores a raw transaction as final only when its bytes hash to the txid asked for', async () => {
    const { txid, hex } = await signedTransfer();
    const other = await signedTransfer();
    const facts = factsFor('GET', `/extended/v1/tx/0x${txid}/raw`);
    expect(rawTxMatches({ raw_tx: `0x${hex}` }, `0x${txid}`)).toBe(true);
    const final = entryOf(admitSurface(facts, answer(200, { raw_tx: `0x${hex}` }, { etag: '"e"' }), asked));
    expect(final).toMatchObject({ cls: 'final', height: 0, tipHash: undefined });
    expect(admitSurface(facts, answer(200, { raw_tx: `0x${other.hex}` }), asked).kind).toBe('pass-on');
    expect(admitSurface(facts, answer(200, { raw_tx: '0x12' }), asked).kind).toBe('pass-on');
    expect(entryOf(admitSurface(facts, answer(404, { error: 'not found' }), asked)).cls).toBe('mempool');
  });

  it('classifies transaction bodies like /tx/{id}: pending → mempool, mined → tip, another tx → failure', () => {
    const tx = `0x${'cd'.repeat(32)}`;
    const facts = factsFor('GET', `/extended/v3/transactions/${tx}`);
    expect(entryOf(admitSurface(facts, answer(200, { tx_id: tx, tx_status: 'pending' }), asked)).cls).toBe('mempool');
    const mined = { tx_id: tx, tx_status: 'success', canonical: true, block_height: 99, burn_block_height: 49, block_hash: '0xb' };
    expect(entryOf(admitSurface(facts, answer(200, mined), asked)).cls).toBe('tip');
    expect(admitSurface(facts, answer(200, { tx_id: `0x${'ee'.repeat(32)}`, tx_status: 'pending' }), asked).kind).toBe('failure');
    expect(entryOf(admitSurface(factsFor('GET', `/extended/v3/transactions/${tx}/events`), answer(200, { events: [] }), asked)).cls).toBe('tip');
  });

  it('confirms a 304 with the stored bytes, validated now', () => {
    const facts = factsFor('GET', '/extended/v2/blocks');
    const entry = entryOf(admitSurface(facts, answer(200, { results: [] }, { etag: '"x"' }), asked));
    const later: Snapshot = { chain: { ...asked.chain, tipHash: '0xt2', tipHeight: 101 }, at: 2_000 };
    const confirmed = confirmSurface(facts, entry, later);
    expect(confirmed.kind).toBe('entry');
    if (confirmed.kind === 'entry') expect(confirmed.entry).toMatchObject({ body: entry.body, validatedAt: 2_000, tipHash: '0xt2', cls: 'tip' });
  });
});

describe('surfaceSpec: evidence for final answers', () => {
  const HASH = 'ab'.repeat(32);
  const counting = (found: { height: number } | undefined) => {
    const calls: string[] = [];
    const evidence: SurfaceEvidence = {
      deployFinal: async (id) => (calls.push(`deploy ${id}`), found),
      blockFinal: async (hash) => (calls.push(`block ${hash}`), found),
    };
    return { calls, evidence };
  };
  const specFor = (method: 'GET' | 'POST', path: string, query: string, evidence: SurfaceEvidence, body?: string) => {
    const match = matchSurface(method, path, query);
    if (!match) throw new Error('no family');
    const plan = planOf(match, query ? `${path}?${query}` : path, query);
    const bytes = body === undefined ? undefined : Buffer.from(body);
    const spec = surfaceSpec({
      plan,
      method,
      keyPrefix: 'scp',
      chain: asked.chain,
      evidence,
      ...(bytes ? { body: { bytes, contentType: 'application/json', canonical: body === 'not json' ? undefined : body } } : {}),
    });
    if (!spec) throw new Error('no spec');
    return spec;
  };

  it('makes a contract interface final once its deploy is, and asks nothing for a 404', async () => {
    const found = counting({ height: 80 });
    const spec = specFor('GET', `/v2/contracts/interface/${ADDRESS}/token`, '', found.evidence);
    expect(await spec.admit(answer(200, { functions: [] }), asked)).toMatchObject({ kind: 'entry', entry: { cls: 'final', height: 80 } });
    expect(found.calls).toEqual([`deploy ${ADDRESS}.token`]);
    await spec.admit(answer(404, 'missing'), asked);
    expect(found.calls).toHaveLength(1);
    const none = counting(undefined);
    expect(await specFor('GET', `/v2/contracts/interface/${ADDRESS}/token`, '', none.evidence).admit(answer(200, {}), asked)).toMatchObject({
      entry: { cls: 'tip' },
    });
  });

  it('never makes a contract source with a per-tip proof final', async () => {
    const found = counting({ height: 80 });
    const withProof = specFor('GET', `/v2/contracts/source/${ADDRESS}/token`, '', found.evidence);
    expect(await withProof.admit(answer(200, { source: '', proof: '0x1' }), asked)).toMatchObject({ entry: { cls: 'tip' } });
    expect(found.calls).toEqual([]);
    const noProof = specFor('GET', `/v2/contracts/source/${ADDRESS}/token`, 'proof=0', found.evidence);
    expect(await noProof.admit(answer(200, { source: '' }), asked)).toMatchObject({ entry: { cls: 'final' } });
  });

  it('makes a call-read pinned to a final block final, keyed without the current tip', async () => {
    const found = counting({ height: 70 });
    const pinned = specFor('POST', `/v2/contracts/call-read/${ADDRESS}/c/f`, `tip=${HASH}`, found.evidence, '{"sender":"x"}');
    expect(pinned.key).not.toContain('0xt1');
    expect(pinned.ask).toMatchObject({ method: 'POST', path: `/v2/contracts/call-read/${ADDRESS}/c/f?tip=${HASH}` });
    expect(await pinned.admit(answer(200, { okay: true, result: '0x03' }), asked)).toMatchObject({ entry: { cls: 'final', height: 70 } });
    expect(found.calls).toEqual([`block ${HASH}`]);
    const unpinned = specFor('POST', `/v2/contracts/call-read/${ADDRESS}/c/f`, '', found.evidence, '{"sender":"x"}');
    expect(unpinned.key).toContain(':0xt1:');
    expect(await unpinned.admit(answer(200, { okay: true }), asked)).toMatchObject({ entry: { cls: 'tip' } });
    expect(found.calls).toHaveLength(1);
  });

  it("never makes a pinned read's node-side failure final: only the chain's answer (okay:true; a map entry's or data var's data)", async () => {
    const found = counting({ height: 70 });
    const call = specFor('POST', `/v2/contracts/call-read/${ADDRESS}/c/f`, `tip=${HASH}`, found.evidence, '{"sender":"x"}');
    // A cost limit is the node's read_only_call_limit setting: another node may answer okay:true.
    expect(await call.admit(answer(200, { okay: false, cause: 'Unchecked(CostBalanceExceeded(...))' }), asked)).toMatchObject({ entry: { cls: 'tip' } });
    expect(await call.admit(answer(200, { okay: true, result: '0x03' }), asked)).toMatchObject({ entry: { cls: 'final', height: 70 } });
    const entry = specFor('POST', `/v2/map_entry/${ADDRESS}/c/m`, `tip=${HASH}&proof=0`, found.evidence, '"0x01"');
    expect(await entry.admit(answer(200, { data: '0x09' }), asked)).toMatchObject({ entry: { cls: 'final' } });
    expect(await entry.admit(answer(200, { error: 'x' }), asked)).toMatchObject({ entry: { cls: 'tip' } });
    const dataVar = specFor('GET', `/v2/data_var/${ADDRESS}/c/v`, `tip=${HASH}&proof=0`, found.evidence);
    expect(await dataVar.admit(answer(200, {}), asked)).toMatchObject({ entry: { cls: 'tip' } });
    expect(await dataVar.admit(answer(200, { data: '0x01' }), asked)).toMatchObject({ entry: { cls: 'final' } });
  });

  it('names the ETag scopes the upstream computes one ETag for (principal, principal_mempool, mempool, transaction)', () => {
    const none = counting(undefined).evidence;
    expect(specFor('GET', `/extended/v3/principals/${ADDRESS}/nonces`, '', none).etagScope).toBe(`principal_mempool:${ADDRESS}`);
    expect(specFor('GET', `/extended/v1/address/${ADDRESS}/assets`, '', none).etagScope).toBe(`principal:${ADDRESS}`);
    expect(specFor('GET', '/extended/v1/tx/mempool', `address=${ADDRESS}`, none).etagScope).toBe('mempool');
    expect(specFor('GET', `/extended/v3/transactions/0x${'AB'.repeat(32)}`, '', none).etagScope).toBe(`transaction:${'ab'.repeat(32)}`);
    expect(specFor('GET', '/extended/v2/blocks', '', none).etagScope).toBeUndefined();
    expect(specFor('GET', `/v2/accounts/${ADDRESS}`, '', none).etagScope).toBeUndefined();
  });

  it('keys burn-keyed families by the burn height too, tip-keyed or not', () => {
    const none = counting(undefined).evidence;
    expect(specFor('GET', '/extended/v2/burn-blocks', '', none).key).toMatch(/:s:burn_blocks:GET:-@50:-:\/extended\/v2\/burn-blocks$/);
    expect(specFor('GET', '/v2/pox', '', none).key).toMatch(/:s:v2_pox:GET:0xt1@50:-:\/v2\/pox$/);
    expect(specFor('GET', '/extended/v2/blocks', '', none).key).toMatch(/:s:blocks:GET:-:-:\/extended\/v2\/blocks$/);
  });

  it('forwards a body without a canonical form but never stores its answer', async () => {
    const spec = specFor('POST', '/v2/fees/transaction', '', counting(undefined).evidence, 'not json');
    expect(spec.ask.body?.toString()).toBe('not json');
    expect((await spec.admit(answer(200, { estimations: [] }), asked)).kind).toBe('pass-on');
  });
});

describe('evidence rules', () => {
  const CONTRACT = `${ADDRESS}.token`;
  const TX = `0x${'12'.repeat(32)}`;
  const stored = (body: unknown, extra: Partial<CacheEntry> = {}): CacheEntry => ({
    status: 200,
    body: Buffer.from(JSON.stringify(body)),
    headers: {},
    etag: '"e"',
    cls: 'final',
    height: 80,
    validatedAt: 0,
    ...extra,
  });
  const deployTx = { tx_id: TX, tx_type: 'smart_contract', tx_status: 'success', smart_contract: { contract_id: CONTRACT } };

  it("takes the deploy txid from the contract's own record only", () => {
    expect(deployTxIdOf(stored({ contract_id: CONTRACT, tx_id: TX }), CONTRACT)).toBe(TX);
    expect(deployTxIdOf(stored({ contract_id: `${ADDRESS}.other`, tx_id: TX }), CONTRACT)).toBeUndefined();
    expect(deployTxIdOf(stored({ contract_id: CONTRACT, tx_id: 'nope' }), CONTRACT)).toBeUndefined();
  });

  it('needs a final, successful deploy of that very contract', () => {
    expect(deployEvidenceOf(stored(deployTx), TX, CONTRACT)).toEqual({ height: 80 });
    expect(deployEvidenceOf(stored(deployTx, { cls: 'tip' }), TX, CONTRACT)).toBeUndefined();
    expect(deployEvidenceOf(stored({ ...deployTx, tx_status: 'abort_by_response' }), TX, CONTRACT)).toBeUndefined();
    expect(deployEvidenceOf(stored({ ...deployTx, smart_contract: { contract_id: `${ADDRESS}.x` } }), TX, CONTRACT)).toBeUndefined();
    expect(deployEvidenceOf(stored({ ...deployTx, tx_type: 'contract_call' }), TX, CONTRACT)).toBeUndefined();
  });

  it('needs the pinned block final and named by its index block hash', () => {
    const hash = 'ab'.repeat(32);
    expect(blockEvidenceOf(stored({ height: 80, index_block_hash: `0x${hash}` }), hash)).toEqual({ height: 80 });
    expect(blockEvidenceOf(stored({ height: 80, index_block_hash: `0x${'cd'.repeat(32)}` }), hash)).toBeUndefined();
    expect(blockEvidenceOf(stored({ height: 80, index_block_hash: `0x${hash}` }, { cls: 'tip' }), hash)).toBeUndefined();
  });

  it('finds every family it needs', () => {
    for (const id of ['contract_interface', 'contract_source', 'constant_val', 'call_read', 'map_entry', 'data_var', 'tx_raw'])
      expect(FAMILY_BY_ID.get(id)?.evidence).toBeDefined();
  });
});

describe('node RPC refusals', () => {
  it("are the request's answer whatever their content type, not a failure of the upstream", async () => {
    const { judgeAnswer } = await import('../../src/upstream/answer-verdict.js');
    const text = { upstream: 'u', headers: { 'content-type': 'text/plain' }, body: Buffer.from('Failed to deserialize'), conditional: false };
    expect(judgeAnswer({ ...text, status: 400, path: '/v2/contracts/call-read/a/b/c' }).kind).toBe('refusal');
    expect(judgeAnswer({ ...text, status: 400, path: '/extended/v1/tx/x' }).kind).toBe('failure');
    expect(judgeAnswer({ ...text, status: 400, path: '/v2/prices/names/x' }).kind).toBe('failure');
    expect(judgeAnswer({ ...text, status: 502, path: '/v2/info' }).kind).toBe('failure');
    expect(judgeAnswer({ ...text, status: 429, path: '/v2/info' }).kind).toBe('failure');
  });
});

describe('which POST reads the proxy reads itself', () => {
  it('takes only JSON with an announced length within the bound, not chunked, not encoded', async () => {
    const { postBodyLength } = await import('../../src/http/surface-dispatch.js');
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as import('node:http').IncomingMessage;
    const json = { 'content-type': 'application/json', 'content-length': '20' };
    expect(postBodyLength(req(json), 64)).toBe(20);
    expect(postBodyLength(req({ ...json, 'content-type': 'application/json; charset=utf-8' }), 64)).toBe(20);
    expect(postBodyLength(req({ ...json, 'content-type': 'Application/JSON;charset="UTF-8"' }), 64)).toBe(20);
    expect(postBodyLength(req({ ...json, 'content-length': '65' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ ...json, 'content-encoding': 'gzip' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ ...json, 'content-type': 'application/json; charset=latin1' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ ...json, 'content-type': 'text/plain' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ 'content-type': 'application/json' }), 64)).toBeUndefined();
    expect(postBodyLength(req({ ...json, 'content-length': '1e2' }), 64)).toBeUndefined();
  });
});
