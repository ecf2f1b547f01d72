/**
 * joinedHeader reads a header from rawHeaders the way node:http's own `req.headers` would give
 * it: compared here with node's own IncomingMessage over arbitrary header lists (names in any
 * case, repeated, absent), so the hit path's shortcut can never disagree with node.
 */
import { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { joinedHeader } from '../../src/http/raw-header.js';

const NAMES = ['x-request-id', 'if-none-match'] as const;

/** A request as node:http's parser leaves it: raw headers, `headers` built on first read. */
function nodeRequest(raw: string[]): IncomingMessage {
  const req = new IncomingMessage(null as never);
  (req as unknown as { _addHeaderLines(raw: string[], n: number): void })._addHeaderLines(raw, raw.length);
  return req;
}

const casings = (name: string) =>
  fc.constantFrom(
    name,
    name.toUpperCase(),
    name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()),
  );
const headerName = fc.oneof(casings('x-request-id'), casings('if-none-match'), fc.constantFrom('Host', 'Accept', 'X-Request', 'if-none-matc', 'ETag'));
const headerValue = fc.string({ maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, ' '));

describe('joinedHeader', () => {
  it('gives what req.headers gives for every header list', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }), (pairs) => {
        const raw = pairs.flat();
        for (const name of NAMES) expect(joinedHeader(nodeRequest(raw), name)).toBe(nodeRequest(raw).headers[name]);
      }),
      { numRuns: 500 },
    );
  });

  it('joins repeated values in order and ignores names that only look alike', () => {
    const req = nodeRequest(['X-Request-Id', 'a', 'X-Request-Ids', 'no', 'x-request-id', 'b']);
    expect(joinedHeader(req, 'x-request-id')).toBe('a, b');
    expect(joinedHeader(req, 'if-none-match')).toBeUndefined();
  });
});
