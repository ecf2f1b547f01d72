/**
 * The fuzz oracle (testkit/fuzz/upstream-oracle.ts) tells an upstream request the proxy may
 * send from one it must not, and the properties (testkit/fuzz/properties.ts) tell a 5xx passed
 * on from one the proxy made: checked here on known cases of both kinds, so that the fuzz
 * properties can fail.
 */
import { describe, expect, it } from 'vitest';
import type { CaseReport, UpstreamExchange } from '../../testkit/fuzz/lane.js';
import { judgeCase } from '../../testkit/fuzz/properties.js';
import { judgeUpstreamRequest, ownRouteAnswer, ownRouteAnswers } from '../../testkit/fuzz/upstream-oracle.js';
import { RECORDED } from '../../testkit/index.js';

const verdictOf = (url: string) => {
  const verdict = judgeUpstreamRequest(url);
  return verdict.ok ? verdict.as : verdict.kind;
};

describe('upstream oracle', () => {
  it('accepts canonical route requests, in the order tx/multiple sends them too', () => {
    expect(verdictOf(`/extended/v1/tx/${RECORDED.confirmedTxId}`)).toBe('route');
    expect(verdictOf('/extended/v1/address/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84/transactions?limit=5')).toBe('route');
    expect(verdictOf(`/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId},${RECORDED.pendingTxId}&event_limit=5`)).toBe('route');
    expect(verdictOf('/extended/v2/blocks/latest')).toBe('route');
  });

  it('refuses route requests the validator refuses or would spell otherwise', () => {
    expect(verdictOf('/extended/v2/blocks/abc')).toBe('unvalidated:block');
    expect(verdictOf('/extended/v1/address/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84/transactions?limit=20')).toBe('not-canonical:address_transactions');
    expect(verdictOf('/extended/v1/address/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84/transactions?limit=1e1')).toBe('not-canonical:address_transactions');
    // until_block goes as the client sent it (the upstream's parseInt reads it as the proxy does).
    expect(verdictOf('/extended/v1/address/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84/stx?until_block=1e%2B21')).toBe('route');
    expect(verdictOf('/extended/v1/address/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84/transactions?limit=1&limit=2')).toBe('unvalidated:address_transactions');
    expect(verdictOf('/extended/v1/contract/%E0%A4%A/events')).toBe('undecodable-route');
  });

  it('refuses a path the upstream reads as a route once it percent-decodes it', () => {
    expect(verdictOf('/extended/v2/mempool/fe%65s')).toBe('route-read-upstream:mempool_fees');
    expect(verdictOf('/%65xtended/v2/blocks/1')).toBe('route-read-upstream:block');
  });

  it('accepts clean passthrough paths under the public prefixes only', () => {
    expect(verdictOf('/v2/info')).toBe('passthrough');
    // Upstream routes next to cached ones, and route 11 input the proxy does not cache.
    expect(verdictOf('/extended/v1/tx/mempool?limit=5')).toBe('passthrough');
    expect(verdictOf('/extended/v2/blocks/average-times')).toBe('passthrough');
    expect(verdictOf('/extended/v2/addresses/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84%2F..%2Fx/transactions')).toBe('passthrough');
    expect(verdictOf('/extended')).toBe('passthrough');
    expect(verdictOf('/extended/v1/status?x=..')).toBe('passthrough');
    expect(verdictOf('/socket.io/?EIO=4&transport=polling')).toBe('passthrough');
    expect(verdictOf('/admin')).toBe('passthrough-prefix');
    expect(verdictOf('//extended/v1/status')).toBe('passthrough-prefix');
    expect(verdictOf('/extended/v1//status')).toBe('passthrough-double-slash');
    expect(verdictOf('/extended\\v1/status')).toBe('passthrough-backslash');
    expect(verdictOf('/extended/v1/x/../status')).toBe('passthrough-dot-segment');
    expect(verdictOf('/extended/v1/%2E%2e/status')).toBe('passthrough-dot-segment');
    expect(verdictOf('/extended/v1/status/.')).toBe('passthrough-dot-segment');
    expect(verdictOf('http://evil.example/v2/info')).toBe('not-origin-form');
  });

  it("knows the one 5xx the proxy gives itself: the upstream's 500 for a negative block height", () => {
    expect(ownRouteAnswer('/extended/v2/blocks/-1')?.status).toBe(500);
    expect(ownRouteAnswer('/extended/v2/blocks/1')).toBeUndefined();
    expect(ownRouteAnswer('/extended/v2/blocks/abc')?.status).toBe(400);
    expect(ownRouteAnswer('/v2/info')).toBeUndefined();
  });

  it('knows it also for a target a proxy may normalise into the route (absolute form, doubled slashes, dot segments, encoded letters)', () => {
    for (const target of [
      '//extended/v2/blocks/-1',
      'http://evil.example/extended/v2/blocks/-1',
      '/extended/x/%2e%2e/v2/blocks/-1',
      '/extended\\v2/blocks/-1',
      '/%65xtended/v2/blocks/-1',
    ]) {
      expect(ownRouteAnswers(target).map((answer) => answer.status)).toContain(500);
    }
    expect(ownRouteAnswers('//extended/v2/blocks/1')).toEqual([]);
  });
});

describe('fuzz properties', () => {
  const answered = (method: 'GET' | 'HEAD', target: string, status: number, body: string, upstream: UpstreamExchange[] = []): CaseReport => ({
    request: { method, target, origin: 'test' },
    outcome: { kind: 'answer', answer: { status, headers: { 'x-cache': 'MISS' }, body: Buffer.from(body) }, ms: 1 },
    upstream,
  });
  const properties = (report: CaseReport) => judgeCase(report).map((v) => v.property);

  it('let a 5xx through only when the upstream gives it for a url it was asked, or it is the negative-height 500', () => {
    const upstream500 = [{ method: 'GET', url: '/extended/v2/blocks/7', status: 500 }];
    expect(properties(answered('GET', '/extended/v2/blocks/7', 500, '{}', upstream500))).toEqual([]);
    expect(properties(answered('GET', '/extended/v2/blocks/7', 502, '{}', upstream500))).toEqual(['no-own-5xx']);
    expect(properties(answered('GET', '/extended/v2/mempool/fees', 502, '{}'))).toEqual(['no-own-5xx']);
    const negative = ownRouteAnswer('/extended/v2/blocks/-1');
    expect(properties(answered('GET', '/extended/v2/blocks/-1', 500, negative?.body ?? ''))).toEqual([]);
    expect(properties(answered('HEAD', '/extended/v2/blocks/-1', 500, ''))).toEqual([]);
    expect(properties(answered('GET', '//extended/v2/blocks/-1', 500, negative?.body ?? ''))).toEqual([]);
    expect(properties(answered('GET', '/extended/v2/blocks/-1', 500, '{"other":1}'))).toEqual(['no-own-5xx']);
  });

  it('count no answer as a failure, and judge every upstream request', () => {
    const silent: CaseReport = {
      request: { method: 'GET', target: '/', origin: 'test' },
      outcome: { kind: 'no-answer', error: 'ECONNRESET: read ECONNRESET', ms: 3 },
      upstream: [],
    };
    expect(judgeCase(silent).map((v) => v.signature)).toEqual(['answers:route:ECONNRESET']);
    const upstream = [
      { method: 'GET', url: '/v2/info' },
      { method: 'GET', url: '/admin' },
      { method: 'GET', url: '/extended/../admin' },
    ];
    expect(judgeCase(answered('GET', '/v2/../extended/../admin', 404, '{}', upstream)).map((v) => v.signature)).toEqual([
      'upstream:passthrough-prefix',
      'upstream:passthrough-dot-segment',
    ]);
  });
});
