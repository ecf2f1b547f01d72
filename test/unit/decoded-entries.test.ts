import { describe, expect, it } from 'vitest';
import { DecodedEntries } from '../../src/cache/decoded-entries.js';
import { decodeEntry, encodeEntry, type CacheEntry } from '../../src/cache/entry.js';

const entryWith = (body: string, etag = '"e1"'): CacheEntry => ({
  status: 200,
  body: Buffer.from(body),
  headers: { 'content-type': 'application/json; charset=utf-8' },
  etag,
  cls: 'final',
  validatedAt: 1_700_000_000_000,
});

function countingDecoder() {
  let calls = 0;
  return { decode: (bytes: Buffer) => (calls++, decodeEntry(bytes)), calls: () => calls };
}

describe('DecodedEntries', () => {
  it('decodes the same bytes of a key once and answers the same entry after', () => {
    const decoded = new DecodedEntries();
    const { decode, calls } = countingDecoder();
    const bytes = encodeEntry(entryWith('{"a":1}'));
    const first = decoded.decode('k', bytes, decode);
    const second = decoded.decode('k', Buffer.from(bytes), decode);
    expect(second).toBe(first);
    expect(calls()).toBe(1);
    expect(first?.body.toString()).toBe('{"a":1}');
  });

  it('decodes afresh when Redis returns other bytes for the key', () => {
    const decoded = new DecodedEntries();
    const { decode, calls } = countingDecoder();
    decoded.decode('k', encodeEntry(entryWith('{"a":1}')), decode);
    const changed = decoded.decode('k', encodeEntry(entryWith('{"a":2}', '"e2"')), decode);
    expect(changed?.body.toString()).toBe('{"a":2}');
    expect(changed?.etag).toBe('"e2"');
    expect(calls()).toBe(2);
  });

  it('keeps nothing for undecodable or large values, and at most 512 keys', () => {
    const decoded = new DecodedEntries();
    const { decode, calls } = countingDecoder();
    expect(decoded.decode('bad', Buffer.from('not an entry'), decode)).toBeUndefined();
    const large = encodeEntry(entryWith('x'.repeat(20_000)));
    decoded.decode('large', large, decode);
    decoded.decode('large', large, decode);
    expect(calls()).toBe(3);
    expect(decoded.size).toBe(0);
    for (let i = 0; i < 2000; i++) decoded.decode(`k${i}`, encodeEntry(entryWith(`{"i":${i}}`)), decode);
    expect(decoded.size).toBe(512);
  });

  it('never keeps a view of a larger buffer (a socket chunk holding other replies)', () => {
    const decoded = new DecodedEntries();
    const bytes = encodeEntry(entryWith('{"a":1}'));
    const chunk = Buffer.alloc(65_536);
    bytes.copy(chunk, 1000);
    const entry = decoded.decode('k', chunk.subarray(1000, 1000 + bytes.length), decodeEntry);
    expect(entry?.body.buffer.byteLength).toBe(bytes.length);
    chunk.fill(0); // the socket's buffer is reused
    expect(decoded.decode('k', bytes, decodeEntry)?.body.toString()).toBe('{"a":1}');
  });
});
