/**
 * V8's heap limits for a given memory tier (issue 14). Left to itself, V8 sizes the heap from
 * the machine (old space up to about 4 GiB, a young generation of up to 3 x 64 MiB) and, under
 * a flood of distinct misses, lets both grow far past what is live: a 16 MiB tier grew RSS by
 * about 260 MiB. Operators size containers from cache.memory.maxBytes, so the heap is sized from
 * it too. Limits can only be set when the process starts: main.ts re-executes itself once with
 * these flags (src/runtime/heap-relaunch.ts).
 */

const MiB = 2 ** 20;

/**
 * Old space for everything but the tier: the idle heap (about 30 MiB), the requests in flight
 * (their bodies are Buffers, outside this space) and the one parse of an upstream answer under
 * way at a time, which upstream/bounded-json.ts keeps within PARSE_HEAP_BUDGET (48 MiB). Under a flood of small misses V8 grows the heap no further with 128 than
 * with 64 (for a 16 MiB tier, medians of +50 MiB RSS with 160 and +52 MiB with 96), so the room costs nothing there.
 */
export const HEAP_BASE_MIB = 128;
/** Old space per MiB of tier: an entry's counted bytes plus the garbage of the entries it evicts. */
export const HEAP_PER_TIER_MIB = 2;
/**
 * The default of heap.maxSemiSpaceMiB: one semi-space of the young generation (V8 reserves three:
 * two semi-spaces and a new large-object space of the same size). Per-request garbage should die
 * there. Issue 14 had set 2 MiB, to keep V8 from growing it to 3 x 64 MiB under a flood of distinct
 * misses. Issue 18 found that too small for any request that waits on I/O (a Redis-tier hit, a miss,
 * the passthrough): with the many such requests in flight, 2 MiB fills before their objects die, so
 * each scavenge promotes them to the old space and mark-compacts follow. For a Redis-tier hit, GC
 * took about 58 of 130 µs CPU a hit (about 9 scavenges and 1 mark-compact per 1,000 hits). With
 * wrk -t1 -c50 (alternating rounds) that hit cost 111-113 µs CPU with 2 MiB and 92-102 µs with 16
 * (98-118 with 8 or 64); a memory hit, which never waits, cost the same. What 16 costs in RSS
 * under a flood: docs/benchmarks.md, memory section.
 */
export const DEFAULT_SEMI_SPACE_MIB = 16;

/**
 * The default of heap.markingStartPercent: V8 starts marking the old space for a full collection
 * once it holds this percent of its current limit (`--incremental-marking-soft-trigger`). Left to
 * its own rule, V8 starts as soon as the room left below the limit is smaller than the young
 * generation's target capacity. With a 16 MiB semi-space (32 MiB without pointer compression)
 * and the old space this process gives itself (128 MiB + twice the tier: V8 then lets the limit
 * grow only 1.3 times what was live, the factor it uses below 256 MiB), that room never is, so
 * every scavenge that promotes anything starts a marking: issue 18 found a mark-compact after
 * every scavenge of a Redis-tier hit (about one per 1,200 hits, as many as scavenges, 11-15 ms
 * each plus marking steps, at any semi-space from 2 to 32 MiB), where the same server on V8's
 * default heap had one per 4,000. With marking started at 40, 60 or 80% of the limit, about one per
 * 6,300 to 6,800. The limit itself, and so the most the heap may hold, is V8's as before. 60 rather
 * than 80: under a flood of distinct misses into a 16 MiB tier, 80 let RSS grow +64 and +70 MiB
 * (issue 14's bound is +64), 60 +53 and +48, V8's own rule +55 and +55 (bench:memory, 40 s each).
 */
export const DEFAULT_MARKING_START_PERCENT = 60;

export interface HeapSizing {
  maxOldSpaceMiB: number;
  maxSemiSpaceMiB: number;
  /** 0: V8's own rule for when marking starts. */
  markingStartPercent: number;
}

/** The default of heap.maxOldSpaceMiB: 128 MiB plus twice the tier. */
export function derivedMaxOldSpaceMiB(tierBytes: number): number {
  return HEAP_BASE_MIB + Math.ceil((HEAP_PER_TIER_MIB * tierBytes) / MiB);
}

/**
 * The heap for a tier of `tierBytes`: `maxOldSpaceMiB` (heap.maxOldSpaceMiB) overrides the derived
 * old space, `maxSemiSpaceMiB` (heap.maxSemiSpaceMiB) is the semi-space.
 */
export function heapSizingFor(
  tierBytes: number,
  maxOldSpaceMiB: number | null,
  maxSemiSpaceMiB = DEFAULT_SEMI_SPACE_MIB,
  markingStartPercent = DEFAULT_MARKING_START_PERCENT,
): HeapSizing {
  return { maxOldSpaceMiB: maxOldSpaceMiB ?? derivedMaxOldSpaceMiB(tierBytes), maxSemiSpaceMiB, markingStartPercent };
}

/** V8's young generation for a semi-space of `maxSemiSpaceMiB`: two semi-spaces and a new large-object space as large. */
export const youngGenerationMiB = (maxSemiSpaceMiB: number): number => 3 * maxSemiSpaceMiB;

const OLD_SPACE_FLAG = '--max-old-space-size';
const SEMI_SPACE_FLAG = '--max-semi-space-size';
const MARKING_START_FLAG = '--incremental-marking-soft-trigger';
const HEAP_FLAGS = [OLD_SPACE_FLAG, SEMI_SPACE_FLAG, MARKING_START_FLAG];

/** Whether `token` is `flag` (V8 also accepts underscores, and a value after "=" or a space). */
function isFlag(flag: string, token: string): boolean {
  const name = token.replace(/_/g, '-').split('=')[0] ?? '';
  return name === flag || name.startsWith(`${flag}-`); // --max-old-space-size-percentage too
}

const given = (flag: string, nodeFlags: readonly string[]): boolean => nodeFlags.some((token) => isFlag(flag, token));

/** The heap flags among node's flags: what the process runs with, for its start-up log. */
export function heapFlagsIn(nodeFlags: readonly string[]): string[] {
  return nodeFlags.filter((token) => HEAP_FLAGS.some((flag) => isFlag(flag, token)));
}

/**
 * The flags to add to node's command line for `sizing`: only those the operator did not pass
 * (on the command line or in NODE_OPTIONS), since an operator's own heap flags win.
 */
export function heapFlagsToAdd(sizing: HeapSizing, nodeFlags: readonly string[]): string[] {
  const flags: string[] = [];
  if (!given(OLD_SPACE_FLAG, nodeFlags)) flags.push(`${OLD_SPACE_FLAG}=${sizing.maxOldSpaceMiB}`);
  if (!given(SEMI_SPACE_FLAG, nodeFlags)) flags.push(`${SEMI_SPACE_FLAG}=${sizing.maxSemiSpaceMiB}`);
  if (sizing.markingStartPercent > 0 && !given(MARKING_START_FLAG, nodeFlags)) flags.push(`${MARKING_START_FLAG}=${sizing.markingStartPercent}`);
  return flags;
}

/** Node's flags as given: the command line's, then NODE_OPTIONS' (split on whitespace). */
export function nodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/).filter((token) => token !== '')];
}
