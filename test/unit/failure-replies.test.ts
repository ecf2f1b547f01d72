/**
 * The one table from failure kind to the answer a client gets: every kind of upstream
 * failure, and a failed passthrough, with its exact status, body and extra headers.
 */
import { describe, expect, it } from 'vitest';
import { failureReply, type FailureKind } from '../../src/errors.js';

interface Expected {
  status: number;
  body: { statusCode: number; error: string; message: string };
  headers: string[];
}

const unavailable: Expected = {
  status: 502,
  body: { statusCode: 502, error: 'Bad Gateway', message: 'The upstream API is unavailable' },
  headers: [],
};

// A Record over FailureKind: a new kind of failure does not typecheck until it has a row here.
const EXPECTED: Record<FailureKind, Expected> = {
  timeout: { status: 504, body: { statusCode: 504, error: 'Gateway Timeout', message: 'The upstream API did not answer in time' }, headers: [] },
  overloaded: {
    status: 503,
    body: { statusCode: 503, error: 'Service Unavailable', message: 'The upstream API is overloaded; retry shortly' },
    headers: ['retry-after', '1'],
  },
  connect: unavailable,
  reset: unavailable,
  '5xx': unavailable,
  invalid: unavailable,
  passthrough: unavailable,
  rate_limited: {
    status: 503,
    body: { statusCode: 503, error: 'Service Unavailable', message: 'The upstream API is rate limiting this proxy; retry after the time in Retry-After' },
    headers: ['retry-after', '1'],
  },
};

describe('failureReply', () => {
  it.each(Object.entries(EXPECTED) as Array<[FailureKind, Expected]>)('answers %s with its status, upstream-shaped body and headers', (kind, expected) => {
    const reply = failureReply(kind);
    expect(reply.status).toBe(expected.status);
    // Exact bytes: key order is part of the upstream's shape.
    expect(reply.body).toBe(JSON.stringify(expected.body));
    expect(reply.headers).toEqual(expected.headers);
  });
});

describe('failureReply for a rate limit', () => {
  it.each([
    [undefined, '1'],
    [0, '1'],
    [1, '1'],
    [1_000, '1'],
    [1_001, '2'],
    [59_500, '60'],
  ])('turns a remaining pause of %s ms into Retry-After: %s (whole seconds, at least 1)', (ms, header) => {
    expect(failureReply('rate_limited', ms).headers).toEqual(['retry-after', header]);
  });

  it('gives other kinds no Retry-After from a pause', () => {
    expect(failureReply('timeout', 5_000).headers).toEqual([]);
  });
});
