import { describe, expect, it } from 'vitest';
import { newRequestId } from '../../src/http/request-log.js';

// A version 4 UUID's shape: the version nibble 4, the variant 8, 9, a or b.
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('new request ids', () => {
  it('have the shape of a version 4 UUID', () => {
    for (let i = 0; i < 100; i++) expect(newRequestId()).toMatch(UUID_V4);
  });

  it('are all different within a process', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50_000; i++) ids.add(newRequestId());
    expect(ids.size).toBe(50_000);
  });
});
