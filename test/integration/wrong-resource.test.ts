/**
 * An upstream that answers with another resource's JSON (a valid body, the wrong block,
 * transaction or id set): through real HTTP, the client gets 502 when that is the only
 * upstream, nothing is stored, and once the upstream answers right the next request is a MISS
 * with the right bytes. With a second upstream the client gets the right answer from it.
 */
import { describe, expect, it } from 'vitest';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const { defer, fakeUpstream } = useCleanups();

const ATTEMPTS = 2;

async function proxyFor(upstreams: FakeUpstream[]) {
  // A high breaker threshold: this is about what is stored, not about when a breaker opens.
  const overrides = { upstream: { maxAttempts: ATTEMPTS, retryBackoffMs: 1, failureThreshold: 100 } };
  const proxy = await startTestProxy({ upstreamUrls: upstreams.map((u) => u.url), overrides });
  defer(() => proxy.close());
  return proxy;
}

const TX = RECORDED.confirmedTxId;
const OTHER_TX = RECORDED.pendingTxId;
const UNKNOWN = RECORDED.unknownTxId;
/** Two recorded with_transfers answers of RECORDED.principal. */
const TRANSFER_TXS = [
  '0x54edb52ee0563978edaca33b68f57d617422d5e3eeb6eff35d1a74e5ec28408d',
  '0x20eee3803137ca99dfe5bc9d7b58408fcac3d647c010b886e823cdeeadb50747',
];
const list = (...ids: string[]) => `/extended/v1/tx/multiple?tx_id=${ids.join(',')}`;
const exactly = (path: string) => new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

describe('an answer about another resource', () => {
  it.each([
    ['block 5 answered with block 6', '/extended/v2/blocks/5', '/extended/v2/blocks/6'],
    ['a block by hash answered with another block', `/extended/v2/blocks/${RECORDED.tipIndexHash}`, '/extended/v2/blocks/3'],
    [
      'a burn block answered with another',
      `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
      '/extended/v1/block/by_burn_block_height/130',
    ],
    ['a transaction answered with another', `/extended/v1/tx/${TX}`, `/extended/v1/tx/${OTHER_TX}`],
    [
      'with_transfers answered for another transaction',
      `/extended/v1/address/${RECORDED.principal}/${TRANSFER_TXS[0]}/with_transfers`,
      `/extended/v1/address/${RECORDED.principal}/${TRANSFER_TXS[1]}/with_transfers`,
    ],
    ['tx/multiple with an asked id left out', list(TX, UNKNOWN), list(TX)],
    ['tx/multiple with an id nobody asked for', list(TX), list(TX, UNKNOWN)],
    ['a mixed-case tx/multiple (read whole) with an extra id', list(`0x${TX.slice(2).toUpperCase()}`), list(TX, UNKNOWN)],
  ])('%s: 502 from the only upstream, never stored, a MISS with the right bytes once it recovers', async (_name, path, answeredAs) => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    const invalidBefore = await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' });
    // The tip block's own URL is also the tracker's (it reads the tip's anchor there): counted from here.
    const askedBefore = upstream.count(exactly(path));
    upstream.setFailing({ answerAs: answeredAs }, exactly(path));

    const failed = await fetchRaw(proxy.url + path);
    expect(failed.status).toBe(502);
    expect(JSON.parse(failed.body.toString())).toMatchObject({ statusCode: 502, error: 'Bad Gateway' });
    expect(upstream.count(exactly(path)) - askedBefore).toBe(ATTEMPTS);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' })).toBe(invalidBefore + ATTEMPTS);

    upstream.setFailing(null);
    const healed = await fetchRaw(proxy.url + path);
    expect(healed.status).toBe(200);
    expect(healed.headers.get('x-cache')).toBe('MISS');
    expect(healed.body.equals((await fetchRaw(upstream.url + path)).body)).toBe(true);
  });

  it('composing tx/multiple: an answer for the missing ids that holds another id is refused, the cached member kept', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor([upstream]);
    expect((await fetchRaw(`${proxy.url}/extended/v1/tx/${TX}`)).status).toBe(200); // TX is cached; only UNKNOWN is missing
    upstream.setFailing({ answerAs: list(OTHER_TX) }, exactly(list(UNKNOWN)));
    expect((await fetchRaw(proxy.url + list(TX, UNKNOWN))).status).toBe(502);
    expect(upstream.count(exactly(list(UNKNOWN)))).toBe(ATTEMPTS);

    upstream.setFailing(null);
    const healed = await fetchRaw(proxy.url + list(TX, UNKNOWN));
    expect(healed.status).toBe(200);
    expect(healed.body.equals((await fetchRaw(upstream.url + list(TX, UNKNOWN))).body)).toBe(true);
    // Nothing of the wrong answer was stored: the other transaction is still fetched when asked for.
    upstream.resetCounts();
    expect((await fetchRaw(`${proxy.url}/extended/v1/tx/${OTHER_TX}`)).headers.get('x-cache')).toBe('MISS');
  });

  it('with two upstreams the client gets the right answer from the other one', async () => {
    const [wrong, right] = [await fakeUpstream(), await fakeUpstream()];
    const proxy = await proxyFor([wrong, right]);
    wrong.setFailing({ answerAs: '/extended/v2/blocks/6' }, /^\/extended\/v2\/blocks\/5$/);
    const response = await fetchRaw(`${proxy.url}/extended/v2/blocks/5`);
    expect(response.status).toBe(200);
    expect(response.body.equals((await fetchRaw(`${right.url}/extended/v2/blocks/5`)).body)).toBe(true);
    expect([wrong.count('/extended/v2/blocks/5'), right.count('/extended/v2/blocks/5')]).toEqual([1, 2]); // the proxy's request and ours
    // The right block is stored and served as such.
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/5`)).headers.get('x-cache')).toBe('HIT');
  });
});
