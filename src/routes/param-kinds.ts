/**
 * Parameter checks that reproduce the upstream's Ajv validation (Fastify defaults:
 * coerceTypes 'array', allErrors false) message for message, so the proxy can reject
 * bad input itself with the exact body the upstream would send (upstream-contract §1.2–§2).
 *
 * Zod is used for configuration; here the contract is Ajv's wording (anyOf messages
 * joined with ", ", coercion quirks), which is shorter to state directly than to
 * rebuild from zod issues.
 */

/** A query or path value as parsed: repeated keys give arrays. */
export type RawValue = string | string[] | undefined;

/** One Ajv error: `subpath` is appended to the parameter's path (e.g. "/0" for an array item). */
export interface ParamError {
  subpath: string;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; errors: ParamError[] };

export type Check<T> = (raw: string | string[]) => Checked<T>;

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = <T>(message: string, subpath = ''): Checked<T> => ({ ok: false, errors: [{ subpath, message }] });

/** Ajv's 'array' coercion unwraps a single-item array into a scalar; more items stay a type error. */
function scalar(raw: string | string[]): string | undefined {
  if (typeof raw === 'string') return raw;
  return raw.length === 1 ? raw[0] : undefined;
}

/** Ajv's string → integer coercion: `d && d == +d && !(d % 1)`; Infinity is not an integer. */
function coerceInteger(text: string): number | undefined {
  if (text === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) && n % 1 === 0 ? n : undefined;
}

/**
 * The spelling an integer is forwarded in. The upstream reads a value with Ajv's coercion
 * (`+text`), so every spelling of the same number (leading zeros, `1e1`, `0x10`) is the same
 * request, and a safe integer goes as its shortest digits. Beyond 2^53 `String(n)` would give
 * `1e+21`, which a handler that re-parses with parseInt (until_block) reads as 1: the exact
 * decimal digits of the double the upstream reads go instead (at most 309 digits), which Ajv
 * and parseInt both read back as that same double.
 */
export function integerText(n: number): string {
  return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString();
}

const DIGITS = /^-?[0-9]+$/;

/**
 * The spelling an integer goes to the upstream in: the client's own digits, whatever their length
 * (`until_block=1000…000` with 61 digits goes as those 61 digits, not as the digits of the double
 * the upstream reads, which differ past 2^53), since the upstream reads them as the same number;
 * other spellings the upstream reads as a number (`1e3`, `0x10`, ` 5`) go as `canonical`. The
 * cache key always holds the canonical form, so all spellings of a number share one entry.
 */
export function forwardedInteger(text: string, canonical: string): string {
  return DIGITS.test(text) ? text : canonical;
}

export function integer(opts: { min?: number; max?: number } = {}): Check<number> {
  return (raw) => {
    const text = scalar(raw);
    const n = text === undefined ? undefined : coerceInteger(text);
    if (n === undefined) return fail('must be integer');
    if (opts.min !== undefined && n < opts.min) return fail(`must be >= ${opts.min}`);
    if (opts.max !== undefined && n > opts.max) return fail(`must be <= ${opts.max}`);
    return ok(n);
  };
}

/** Only the literal strings `true` and `false` coerce (v8+; v7 accepted more). */
export const boolean: Check<boolean> = (raw) => {
  const text = scalar(raw);
  if (text === 'true') return ok(true);
  if (text === 'false') return ok(false);
  return fail('must be boolean');
};

export const string: Check<string> = (raw) => {
  const text = scalar(raw);
  return text === undefined ? fail('must be string') : ok(text);
};

/**
 * The longest value of a free-text query parameter (until_block, cursor). The upstream sets no
 * limit (only Node's 16 KiB request head bounds it); the longest meaningful values are 66
 * (a block hash) and about 90 characters (a cursor). Bounded so that every cache key is.
 */
export const MAX_FREE_TEXT_LENGTH = 256;

/**
 * A string with Ajv's `maxLength` (counted in code points, as Ajv does). The upstream declares
 * none on the values that use this: the proxy's own bound, so that no value makes an unbounded
 * cache key, worded as the upstream's schema would word it.
 */
export function boundedString(maxLength: number): Check<string> {
  return (raw) => {
    const text = scalar(raw);
    if (text === undefined) return fail('must be string');
    return exceedsLength(text, maxLength) ? fail(`must NOT have more than ${maxLength} characters`) : ok(text);
  };
}

/** Whether `text` has more than `max` code points; stops counting once it does. */
export function exceedsLength(text: string, max: number): boolean {
  if (text.length <= max) return false;
  if (text.length > 2 * max) return true;
  let points = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) i++; // a surrogate pair is one character
    if (++points > max) return true;
  }
  return false;
}

export function pattern(source: string): Check<string> {
  const re = new RegExp(source);
  return (raw) => {
    const text = scalar(raw);
    if (text === undefined) return fail('must be string');
    return re.test(text) ? ok(text) : fail(`must match pattern "${source}"`);
  };
}

export function constant<T extends string>(value: T): Check<T> {
  return (raw) => (scalar(raw) === value ? ok(value) : fail('must be equal to constant'));
}

/** Ajv anyOf: the first branch that passes wins; otherwise every branch's error, then the anyOf error. */
export function anyOf<T>(...branches: Check<T>[]): Check<T> {
  return (raw) => {
    const errors: ParamError[] = [];
    for (const branch of branches) {
      const result = branch(raw);
      if (result.ok) return result;
      errors.push(...result.errors);
    }
    errors.push({ subpath: '', message: 'must match a schema in anyOf' });
    return { ok: false, errors };
  };
}

/**
 * An array parameter. `splitCommas` mirrors the upstream's preValidation hook, which splits
 * a value on "," only when the key was given once (a repeated key is never split). `maxItems`
 * is checked before the items, as Ajv does.
 */
export function arrayOf<T>(item: Check<T>, opts: { splitCommas: boolean; maxItems?: number }): Check<T[]> {
  return (raw) => {
    const items = typeof raw === 'string' ? (opts.splitCommas ? raw.split(',') : [raw]) : raw;
    if (opts.maxItems !== undefined && items.length > opts.maxItems) return fail(`must NOT have more than ${opts.maxItems} items`);
    const values: T[] = [];
    for (const [index, value] of items.entries()) {
      const result = item(value);
      if (!result.ok) {
        return { ok: false, errors: result.errors.map((e) => ({ ...e, subpath: `/${index}${e.subpath}` })) };
      }
      values.push(result.value);
    }
    return ok(values);
  };
}

// Patterns exactly as the upstream declares them (src/api/schemas/v1/params.ts). The
// address pattern has no end anchor and the contract pattern an unescaped ".": kept as is.
// All three run in linear time: anchored at the start, bounded repeats, no nested quantifier
// over overlapping classes, so a failing match gives up within the first ~82 characters.
export const TX_ID_PATTERN = '^(0x)?[a-fA-F0-9]{64}$';
export const ADDRESS_PATTERN = '^[0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}';
export const CONTRACT_ID_PATTERN = '^[0123456789ABCDEFGHJKMNPQRSTVWXYZ]{28,41}.[a-zA-Z]([a-zA-Z0-9]|[-_]){0,39}$';

export const txId = pattern(TX_ID_PATTERN);
export const principal = anyOf(pattern(ADDRESS_PATTERN), pattern(CONTRACT_ID_PATTERN));

export const EVENT_TYPES = ['smart_contract_log', 'stx_lock', 'stx_asset', 'fungible_token_asset', 'non_fungible_token_asset'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const eventType: Check<EventType> = anyOf(...EVENT_TYPES.map((t) => constant(t)));

/** `latest`, a 64-hex hash (0x optional) or an integer height (negative passes the schema). */
export type HeightOrHash = { kind: 'latest' } | { kind: 'hash'; hash: string } | { kind: 'height'; height: number };
export const heightOrHash: Check<HeightOrHash> = anyOf<HeightOrHash>(
  (raw) => (constant('latest')(raw).ok ? ok({ kind: 'latest' }) : fail('must be equal to constant')),
  (raw) => {
    const result = txId(raw);
    return result.ok ? ok({ kind: 'hash', hash: result.value }) : result;
  },
  (raw) => {
    const result = integer()(raw);
    return result.ok ? ok({ kind: 'height', height: result.value }) : result;
  },
);
