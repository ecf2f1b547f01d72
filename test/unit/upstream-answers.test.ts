/**
 * The pure parts of judging an upstream: what an HTTP answer is (answer-verdict.ts), how long
 * a 429 keeps an upstream alone (retry-after.ts), which headers the operator's settings add
 * (outgoing-headers.ts), and the health owner's rate-limit bookkeeping on an injected clock.
 */
import { describe, expect, it } from 'vitest';
import { isUpstreamErrorBody, judgeAnswer, type AnswerFacts } from '../../src/upstream/answer-verdict.js';
import { UpstreamHealth } from '../../src/upstream/health.js';
import { refusedHeader, upstreamHeadersFor } from '../../src/upstream/outgoing-headers.js';
import { retryAfterMs } from '../../src/upstream/retry-after.js';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
const HTML_TYPE = { 'content-type': 'text/html' };
const ERROR_SHAPE = Buffer.from('{"statusCode":500,"error":"Internal Server Error","message":"boom"}');

function facts(status: number, extra: Partial<AnswerFacts> = {}): AnswerFacts {
  return { upstream: 'http://a', status, headers: JSON_TYPE, body: ERROR_SHAPE, conditional: false, ...extra };
}

const verdictOf = (f: AnswerFacts): string => {
  const verdict = judgeAnswer(f);
  return verdict.kind === 'failure' ? `failure:${verdict.error.kind}` : verdict.kind;
};

describe('judgeAnswer', () => {
  it.each([
    [200, {}, 'answer'],
    [302, {}, 'answer'],
    [404, {}, 'answer'],
    [404, { headers: HTML_TYPE, body: Buffer.from('<html>') }, 'answer'], // admission refuses the body
    [304, { conditional: true }, 'answer'],
    [304, { conditional: false }, 'failure:invalid'],
    [429, {}, 'failure:rate_limited'],
    [502, {}, 'failure:5xx'],
    [503, {}, 'failure:5xx'],
    [504, {}, 'failure:5xx'],
    [500, {}, 'refusal'],
    [400, {}, 'refusal'],
    [405, { body: Buffer.from('{"message":"Route GET:/x not found","error":"Not Found","statusCode":405}') }, 'refusal'],
    [400, { body: Buffer.from('{"error":"invalid until_block"}') }, 'refusal'],
    [500, { headers: HTML_TYPE, body: Buffer.from('<html>oops</html>') }, 'failure:5xx'],
    [500, { body: Buffer.from('{"statusCode":500') }, 'failure:5xx'],
    [500, { body: Buffer.from('[1]') }, 'failure:5xx'],
    [403, { headers: HTML_TYPE, body: Buffer.from('<html>denied</html>') }, 'failure:invalid'],
    [501, {}, 'failure:5xx'],
  ] as const)('status %i %j is %s', (status, extra, expected) => {
    expect(verdictOf(facts(status, extra as Partial<AnswerFacts>))).toBe(expected);
  });

  it('names the upstream and the status in a failure', () => {
    const verdict = judgeAnswer(facts(304));
    expect(verdict.kind === 'failure' && verdict.error.message).toBe('an unsolicited 304 (no If-None-Match was sent) from http://a (status 304)');
  });
});

describe('isUpstreamErrorBody', () => {
  it.each([
    ['{"statusCode":400,"error":"Bad Request","message":"x"}', true],
    ['{"error":"could not find"}', true],
    ['{"message":"x"}', true],
    ['{"error":{"nested":true}}', false],
    ['{}', false],
    ['null', false],
    ['"text"', false],
    ['not json', false],
  ])('%s: %s', (body, expected) => {
    expect(isUpstreamErrorBody(JSON_TYPE, Buffer.from(body))).toBe(expected);
  });

  it('needs a JSON content type', () => {
    expect(isUpstreamErrorBody({ 'content-type': 'text/plain' }, ERROR_SHAPE)).toBe(false);
    expect(isUpstreamErrorBody({}, ERROR_SHAPE)).toBe(false);
  });
});

describe('retryAfterMs', () => {
  const settings = { defaultMs: 5_000, maxMs: 60_000 };
  const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

  it.each([
    ['7', 7_000],
    [' 7 ', 7_000],
    ['0', 0],
    ['3600', 60_000],
    ['99999999999999999999999', 60_000],
    [undefined, 5_000],
    ['', 5_000],
    ['-5', 5_000],
    ['1.5', 5_000],
    ['soon', 5_000],
    [new Date(NOW + 20_000).toUTCString(), 20_000],
    [new Date(NOW - 20_000).toUTCString(), 0],
    [new Date(NOW + 3_600_000).toUTCString(), 60_000],
  ])('%j waits %i ms', (value, expected) => {
    expect(retryAfterMs(value, NOW, settings)).toBe(expected);
  });
});

describe('upstreamHeadersFor', () => {
  const base = { apiKey: null, headers: {}, headersByUrl: {} };

  it('adds nothing without settings', () => {
    expect(upstreamHeadersFor('http://a', base)).toEqual({});
  });

  it('sends the API key as x-api-key, over a general header, under a per-URL one', () => {
    const settings = {
      apiKey: 'key',
      headers: { 'x-api-key': 'general', 'x-tenant': 't' },
      headersByUrl: { 'http://b': { 'x-api-key': 'b-key' } },
    };
    expect(upstreamHeadersFor('http://a', settings)).toEqual({ 'x-api-key': 'key', 'x-tenant': 't' });
    expect(upstreamHeadersFor('http://b', settings)).toEqual({ 'x-api-key': 'b-key', 'x-tenant': 't' });
  });

  it('returns a new object each time: a caller that adds to it changes nothing for the next', () => {
    const settings = { ...base, headers: { 'x-tenant': 't' } };
    upstreamHeadersFor('http://a', settings)['x-extra'] = '1';
    expect(upstreamHeadersFor('http://a', settings)).toEqual({ 'x-tenant': 't' });
  });
});

describe('refusedHeader', () => {
  it.each([
    'Host',
    'connection',
    'Keep-Alive',
    'transfer-encoding',
    'upgrade',
    'TE',
    'trailer',
    'proxy-authorization',
    'content-length',
    'if-none-match',
    'range',
    'accept-encoding',
  ])('refuses %s', (name) => {
    expect(refusedHeader(name, 'x')).toContain(`"${name}"`);
  });

  it.each(['x-api-key', 'authorization', 'x-tenant', 'user-agent'])('allows %s', (name) => {
    expect(refusedHeader(name, 'value with spaces\tand tabs')).toBeUndefined();
  });

  it('refuses bad names and control characters in values', () => {
    expect(refusedHeader('bad name', 'x')).toBe('"bad name" is not a valid header name');
    expect(refusedHeader('x-a', 'a\r\nb: c')).toBe('the value of "x-a" contains a control character');
    expect(refusedHeader('x-a', 'a\u0000')).toBe('the value of "x-a" contains a control character');
  });
});

describe('rate limits in the health owner', () => {
  function healthAt(clock: { now: number }) {
    return new UpstreamHealth(['http://a', 'http://b'], { failureThreshold: 3, cooldownMs: 1_000, maxLagBlocks: 3 }, () => clock.now);
  }

  it('skips a limited upstream until its pause has passed, and reports it unusable meanwhile', () => {
    const clock = { now: 1_000_000 };
    const health = healthAt(clock);
    health.rateLimited('http://a', 7_000);
    expect(health.acquire(new Set())).toBe('http://b');
    expect(health.status().find((s) => s.origin === 'http://a')).toMatchObject({ usable: false, rateLimitedMs: 7_000 });
    expect(health.rateLimitRemaining('http://a')).toBe(7_000);
    clock.now += 7_000;
    expect(health.acquire(new Set())).toBe('http://a');
    expect(health.status().find((s) => s.origin === 'http://a')).toMatchObject({ usable: true, rateLimitedMs: undefined });
  });

  it('keeps the longer of two pauses', () => {
    const clock = { now: 1_000_000 };
    const health = healthAt(clock);
    health.rateLimited('http://a', 10_000);
    health.rateLimited('http://a', 2_000);
    expect(health.rateLimitRemaining('http://a')).toBe(10_000);
  });

  it('says how long until any upstream may be asked when all are limited, else nothing', () => {
    const clock = { now: 1_000_000 };
    const health = healthAt(clock);
    health.rateLimited('http://a', 10_000);
    expect(health.rateLimitedForAll()).toBeUndefined();
    health.rateLimited('http://b', 4_000);
    expect(health.rateLimitedForAll()).toBe(4_000);
    expect(health.acquire(new Set())).toBeUndefined();
  });
});
