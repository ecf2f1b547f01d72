/** V8's heap limits derived from the memory tier (issue 14), and which flags main.ts adds. */
import { describe, expect, it } from 'vitest';
import { derivedMaxOldSpaceMiB, heapFlagsIn, heapFlagsToAdd, heapSizingFor, nodeFlags, youngGenerationMiB } from '../../src/runtime/heap-sizing.js';

const MiB = 2 ** 20;

describe('heap sizing', () => {
  it('gives the old space 128 MiB plus twice the tier, rounded up to a whole MiB', () => {
    expect(derivedMaxOldSpaceMiB(16 * MiB)).toBe(160);
    expect(derivedMaxOldSpaceMiB(128 * MiB)).toBe(384);
    expect(derivedMaxOldSpaceMiB(32 * MiB)).toBe(192);
    expect(derivedMaxOldSpaceMiB(1)).toBe(129);
  });

  it('takes heap.maxOldSpaceMiB over the derived size, and a 16 MiB semi-space either way by default (issue 18)', () => {
    expect(heapSizingFor(16 * MiB, null)).toEqual({ maxOldSpaceMiB: 160, maxSemiSpaceMiB: 16, markingStartPercent: 60 });
    expect(heapSizingFor(16 * MiB, 200)).toEqual({ maxOldSpaceMiB: 200, maxSemiSpaceMiB: 16, markingStartPercent: 60 });
  });

  it('takes heap.maxSemiSpaceMiB as the semi-space, whatever the old space', () => {
    expect(heapSizingFor(16 * MiB, null, 2)).toEqual({ maxOldSpaceMiB: 160, maxSemiSpaceMiB: 2, markingStartPercent: 60 });
    expect(heapSizingFor(128 * MiB, 300, 64)).toEqual({ maxOldSpaceMiB: 300, maxSemiSpaceMiB: 64, markingStartPercent: 60 });
    expect(heapFlagsToAdd(heapSizingFor(32 * MiB, null, 4, 0), nodeFlags([], undefined))).toEqual(['--max-old-space-size=192', '--max-semi-space-size=4']);
  });

  it("lets the operator's own --max-semi-space-size win over heap.maxSemiSpaceMiB", () => {
    const sizing = heapSizingFor(16 * MiB, null, 2, 0);
    expect(heapFlagsToAdd(sizing, nodeFlags([], '--max-semi-space-size=32'))).toEqual(['--max-old-space-size=160']);
    expect(heapFlagsToAdd(sizing, nodeFlags(['--max_semi_space_size', '8'], undefined))).toEqual(['--max-old-space-size=160']);
  });

  it('starts marking at heap.markingStartPercent of the old-space limit (60 by default, issue 18); 0 leaves it to V8', () => {
    expect(heapFlagsToAdd(heapSizingFor(16 * MiB, null), nodeFlags([], undefined))).toEqual([
      '--max-old-space-size=160',
      '--max-semi-space-size=16',
      '--incremental-marking-soft-trigger=60',
    ]);
    expect(heapFlagsToAdd(heapSizingFor(16 * MiB, null, 16, 90), nodeFlags([], undefined))).toContain('--incremental-marking-soft-trigger=90');
    expect(heapFlagsToAdd(heapSizingFor(16 * MiB, null, 16, 0), nodeFlags([], undefined)).join(' ')).not.toContain('marking');
  });

  it("lets the operator's own --incremental-marking-soft-trigger win, and logs it among the heap flags", () => {
    const sizing = heapSizingFor(16 * MiB, null);
    expect(heapFlagsToAdd(sizing, nodeFlags(['--incremental_marking_soft_trigger=50'], undefined))).toEqual([
      '--max-old-space-size=160',
      '--max-semi-space-size=16',
    ]);
    expect(heapFlagsIn(nodeFlags(['--incremental-marking-soft-trigger=50', '--trace-warnings'], undefined))).toEqual(['--incremental-marking-soft-trigger=50']);
  });

  it('counts the young generation as three semi-spaces (two and a new large-object space)', () => {
    expect(youngGenerationMiB(16)).toBe(48);
    expect(youngGenerationMiB(2)).toBe(6);
  });

  it('adds both flags when node was given neither', () => {
    expect(heapFlagsToAdd({ maxOldSpaceMiB: 96, maxSemiSpaceMiB: 2, markingStartPercent: 0 }, nodeFlags([], undefined))).toEqual([
      '--max-old-space-size=96',
      '--max-semi-space-size=2',
    ]);
    expect(
      heapFlagsToAdd({ maxOldSpaceMiB: 96, maxSemiSpaceMiB: 2, markingStartPercent: 0 }, nodeFlags(['--enable-source-maps'], '--trace-warnings')),
    ).toHaveLength(2);
  });

  it("leaves the operator's own flags alone, however they are spelled and wherever they were given", () => {
    const sizing = { maxOldSpaceMiB: 96, maxSemiSpaceMiB: 2, markingStartPercent: 0 };
    expect(heapFlagsToAdd(sizing, nodeFlags(['--max-old-space-size=512'], undefined))).toEqual(['--max-semi-space-size=2']);
    expect(heapFlagsToAdd(sizing, nodeFlags([], '  --max_old_space_size=512 '))).toEqual(['--max-semi-space-size=2']);
    expect(heapFlagsToAdd(sizing, nodeFlags([], '--max-old-space-size-percentage=50'))).toEqual(['--max-semi-space-size=2']);
    expect(heapFlagsToAdd(sizing, nodeFlags(['--max-semi-space-size=8'], '--max-old-space-size 512'))).toEqual([]);
  });

  it('finds the heap flags among the others, for the start-up log', () => {
    expect(heapFlagsIn(nodeFlags(['--enable-source-maps', '--max-old-space-size=160'], '--max_semi_space_size=2 --trace-warnings'))).toEqual([
      '--max-old-space-size=160',
      '--max_semi_space_size=2',
    ]);
    expect(heapFlagsIn(nodeFlags(['--max-old-space'], undefined))).toEqual([]);
  });

  it('adds nothing once the process runs with the flags it added (no second relaunch)', () => {
    const sizing = heapSizingFor(16 * MiB, null);
    const added = heapFlagsToAdd(sizing, nodeFlags([], undefined));
    expect(heapFlagsToAdd(sizing, nodeFlags(added, undefined))).toEqual([]);
  });
});
