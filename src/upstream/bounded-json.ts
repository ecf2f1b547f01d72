/**
 * JSON.parse of an upstream body, bounded in what it may cost the heap (pure). The heap is sized
 * from the memory tier (runtime/heap-sizing.ts), and a parse allocates far more than the body's
 * bytes: measured on Node 24, 10 MiB of `[{},{},…]` takes 223 MiB of heap, `[[],[],…]` 143 MiB,
 * `[0,0,…]` 50 MiB, while 10 MiB of text in one string takes about 20. One hostile or broken
 * upstream answer of `upstream.maxBodyBytes` could then stop the process with an out-of-memory
 * error. A body whose parse could cost more than PARSE_HEAP_BUDGET is not parsed: it is treated
 * as a body that is not JSON, which every caller already handles as the upstream's fault
 * (an invalid answer, retried elsewhere, never stored). Parses are synchronous, so only one is
 * under way at a time and the budget is per process.
 */

const MiB = 2 ** 20;

/** Heap one parse may take; part of the heap's fixed base (runtime/heap-sizing.ts HEAP_BASE_MIB). */
export const PARSE_HEAP_BUDGET = 48 * MiB;

/**
 * What a parse allocates, fitted to the measurements above and rounded up: per byte of text (the
 * decoded string and its pieces), per object or array, and per element or member beyond its
 * container. A real answer of small objects (a list of events) comes to about 3.5x its bytes,
 * so a 10 MiB one still parses; the shapes above come to 5x (numbers) to 27x (empty objects).
 */
const HEAP_PER_BYTE = 2;
const HEAP_PER_CONTAINER = 64;
const HEAP_PER_ELEMENT = 12;
/** The most one byte of JSON can cost (a `{}` or `[]` with its comma: 3 bytes for a container and an element). */
const WORST_HEAP_PER_BYTE = HEAP_PER_BYTE + Math.ceil((HEAP_PER_CONTAINER + HEAP_PER_ELEMENT) / 3);

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;

/**
 * An upper bound of the heap JSON.parse would take for `body`, or 0 when even its worst case
 * fits the budget (the common case: bodies under about 1.7 MiB are never scanned). Linear in the
 * body; braces and commas inside strings are counted too, which only overestimates.
 */
export function parseHeapEstimate(body: Uint8Array): number {
  if (body.length * WORST_HEAP_PER_BYTE <= PARSE_HEAP_BUDGET) return 0;
  let containers = 0;
  let elements = 0;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) containers++;
    else if (byte === COMMA) elements++;
  }
  return body.length * HEAP_PER_BYTE + containers * HEAP_PER_CONTAINER + elements * HEAP_PER_ELEMENT;
}

/** The body as JSON; undefined when it does not parse, or when parsing it could cost more heap than PARSE_HEAP_BUDGET. */
export function parseBoundedJson(body: Buffer): unknown {
  if (parseHeapEstimate(body) > PARSE_HEAP_BUDGET) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
