/**
 * Keys of the wider read surface and the canonical JSON of POST read bodies: two requests share
 * a key only when method, family, forwarded path and query, canonical body and tip all agree;
 * keys stay bounded; the canonical form is what a JSON reader sees (whitespace, member order and
 * string escapes aside), idempotent, and refuses what readers disagree on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, MAX_DEPTH } from '../../src/surface/canonical-json.js';
import { FAMILY_BY_ID, type Family } from '../../src/surface/families.js';
import { isTipKeyed, MAX_KEY_REQUEST_CHARS, pinnedTip, queryValues, surfaceKey, withoutProof, type KeyParts } from '../../src/surface/plan.js';

const family = (id: string): Family => {
  const found = FAMILY_BY_ID.get(id);
  if (!found) throw new Error(`no family ${id}`);
  return found;
};
const canonical = (text: string) => canonicalJson(Buffer.from(text, 'utf8'));
const canonicalText = (text: string): string => {
  const result = canonical(text);
  if (result.kind !== 'json') throw new Error(`refused: ${result.why}`);
  return result.text;
};
const HASH = 'a'.repeat(64);

describe('surfaceKey', () => {
  const parts = fc.record({
    method: fc.constantFrom<'GET' | 'POST'>('GET', 'POST'),
    family: fc.constantFrom(family('call_read'), family('map_entry'), family('v2_accounts'), family('v2_info')),
    // A small alphabet so that equal parts come up often, and long ones cross the hashing bound.
    url: fc.oneof(fc.stringMatching(/^\/[ab?=&]{0,6}$/), fc.stringMatching(/^\/[ab]{600,700}$/)),
    canonicalBody: fc.option(fc.oneof(fc.stringMatching(/^[{}"a1:]{0,5}$/), fc.stringMatching(/^[ab]{600,620}$/)), { nil: undefined }),
    tip: fc.option(fc.record({ hash: fc.constantFrom('0x01', '0x02'), burnHeight: fc.option(fc.constantFrom(7, 8), { nil: undefined }) }), { nil: undefined }),
  });
  const keyOf = (p: Omit<KeyParts, 'prefix'>) => surfaceKey({ prefix: 'scp', ...p });
  const same = (a: Omit<KeyParts, 'prefix'>, b: Omit<KeyParts, 'prefix'>): boolean =>
    a.method === b.method &&
    a.family.id === b.family.id &&
    a.url === b.url &&
    a.canonicalBody === b.canonicalBody &&
    a.tip?.hash === b.tip?.hash &&
    a.tip?.burnHeight === b.tip?.burnHeight;

  it('is shared by two requests exactly when method, family, URL, canonical body and tip agree', () => {
    fc.assert(
      fc.property(parts, parts, (a, b) => {
        expect(keyOf(a) === keyOf(b)).toBe(same(a, b));
      }),
      { numRuns: 3000 },
    );
  });

  it('is bounded: long request parts are hashed', () => {
    fc.assert(
      fc.property(parts, (p) => {
        expect(keyOf(p).length).toBeLessThanOrEqual(MAX_KEY_REQUEST_CHARS + 200);
      }),
    );
    const key = keyOf({ method: 'POST', family: family('call_read'), url: '/v2/contracts/call-read/a/b/c', canonicalBody: 'x'.repeat(70_000) });
    expect(key).toMatch(/:~[A-Za-z0-9_-]{43}$/);
  });

  it('reads as <prefix>:v<schema>:s:<family>:<method>:<tip>:<subjects>:<request>', () => {
    expect(keyOf({ method: 'GET', family: family('v2_info'), url: '/v2/info', tip: { hash: '0xab', burnHeight: 9 } })).toMatch(
      /^scp:v\d+:s:v2_info:GET:0xab@9:-:\/v2\/info$/,
    );
    expect(keyOf({ method: 'POST', family: family('call_read'), url: '/v2/x?tip=1', canonicalBody: '{"a":1}', subjects: ',p=SP1.c,' })).toMatch(
      /:s:call_read:POST:-:,p=SP1\.c,:\/v2\/x\?tip=1#\{"a":1\}$/,
    );
  });
});

describe('tip pinning and proofs', () => {
  it('pins only one 64-hex tip, as the node reads it', () => {
    expect(pinnedTip(`tip=${HASH}`)).toBe(HASH);
    expect(pinnedTip(`proof=0&tip=${HASH}`)).toBe(HASH);
    expect(pinnedTip('tip=latest')).toBeUndefined();
    expect(pinnedTip(`tip=0x${HASH}`)).toBeUndefined();
    expect(pinnedTip(`tip=${HASH.toUpperCase()}`)).toBeUndefined();
    expect(pinnedTip(`tip=${HASH}&tip=${HASH}`)).toBeUndefined();
    expect(pinnedTip(`tip=${HASH}&t%69p=${'b'.repeat(64)}`)).toBeUndefined();
    expect(pinnedTip('')).toBeUndefined();
  });

  it('keys pinned reads without the current tip, and unpinned node reads with it', () => {
    expect(isTipKeyed(family('call_read'), `tip=${HASH}`)).toBe(false);
    expect(isTipKeyed(family('call_read'), 'tip=latest')).toBe(true);
    expect(isTipKeyed(family('call_read'), '')).toBe(true);
    expect(isTipKeyed(family('v2_accounts'), `tip=${HASH}`)).toBe(true);
    // About one principal, at the tip: the entry records its tip, and block learning may carry it to the next.
    expect(isTipKeyed(family('v2_accounts'), 'proof=0')).toBe(false);
    expect(isTipKeyed(family('v2_accounts'), 'proof=0&tip=latest')).toBe(true);
    // With a proof (the node's default) the answer holds MARF proofs against the tip's state root: new every block.
    expect(isTipKeyed(family('v2_accounts'), '')).toBe(true);
    expect(isTipKeyed(family('v2_accounts'), 'proof=1')).toBe(true);
    expect(isTipKeyed(family('v2_accounts'), 'proof=0&proof=0')).toBe(true);
    expect(isTipKeyed(family('principal_history'), '')).toBe(false);
  });

  it('knows a proof-free read: proof=0 once, or no proof where the node sends none by default', () => {
    expect(withoutProof('proof=0', true)).toBe(true);
    expect(withoutProof('', true)).toBe(false);
    expect(withoutProof('', false)).toBe(true);
    expect(withoutProof('proof=1', false)).toBe(false);
    expect(withoutProof('proof=0&proof=1', false)).toBe(false);
  });

  it('reads query values raw, names raw or decoded', () => {
    expect(queryValues('a=1&b=2&a=%33', 'a')).toEqual(['1', '%33']);
    expect(queryValues('%61=1', 'a')).toEqual(['1']);
    expect(queryValues('a', 'a')).toEqual(['']);
    expect(queryValues('', 'a')).toEqual([]);
  });
});

describe('canonicalJson', () => {
  /** JSON text of a value with random whitespace and member order. */
  const spelled = (value: unknown, spaces: string, reverse: boolean): string => {
    const write = (v: unknown): string => {
      if (Array.isArray(v)) return `[${spaces}${v.map(write).join(`${spaces},${spaces}`)}${spaces}]`;
      if (v !== null && typeof v === 'object') {
        const members = Object.entries(v as Record<string, unknown>);
        if (reverse) members.reverse();
        return `{${spaces}${members.map(([k, x]) => `${JSON.stringify(k)}${spaces}:${spaces}${write(x)}`).join(`,${spaces}`)}${spaces}}`;
      }
      return JSON.stringify(v);
    };
    return `${spaces}${write(value)}${spaces}`;
  };
  const whitespace = fc.stringMatching(/^[ \t\r\n]{0,3}$/);

  it('is the same for every spelling of one value, and reads back as that value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), whitespace, fc.boolean(), (value, spaces, reverse) => {
        const text = canonicalText(spelled(value, spaces, reverse));
        expect(text).toBe(canonicalText(JSON.stringify(value)));
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 1000 },
    );
  });

  it('is idempotent and differs for values that differ', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.jsonValue({ maxDepth: 5 }), (a, b) => {
        const ca = canonicalText(JSON.stringify(a));
        expect(canonicalText(ca)).toBe(ca);
        const equal = JSON.stringify(JSON.parse(ca)) === JSON.stringify(JSON.parse(canonicalText(JSON.stringify(b))));
        if (!equal) expect(ca).not.toBe(canonicalText(JSON.stringify(b)));
      }),
      { numRuns: 1000 },
    );
  });

  it('re-escapes strings one way and keeps number literals as written', () => {
    expect(canonicalText('"\\u0041\\/"')).toBe('"A/"');
    expect(canonicalText('{"b":1,"a":[1.0, 1e2, -0]}')).toBe('{"a":[1.0,1e2,-0],"b":1}');
    expect(canonicalText('"\\ud800"')).toBe('"\\ud800"');
    expect(canonicalText('{"sender":"SP1","arguments":["0x01"]}')).toBe(canonicalText(' { "arguments" : [ "0x01" ] , "sender" : "SP1" } '));
  });

  it('refuses duplicate keys, bad JSON, bad UTF-8, a BOM and nesting deeper than the bound', () => {
    expect(canonical('{"a":1,"a":2}').kind).toBe('refused');
    expect(canonical('{"a":1,"b":{"c":1,"c":1}}').kind).toBe('refused');
    for (const bad of ['', '{', '{"a"}', '[1,]', '01', '1.', '"\u0001"', 'tru', '{"a":1}x', "'a'", 'NaN', '"\\x"'])
      expect(canonical(bad).kind, bad).toBe('refused');
    expect(canonicalJson(Buffer.from([0x22, 0xff, 0x22])).kind).toBe('refused');
    expect(canonicalJson(Buffer.from('\ufeff{}', 'utf8')).kind).toBe('refused');
    expect(canonical(`${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}`).kind).toBe('json');
    expect(canonical(`${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}`).kind).toBe('refused');
    expect(canonical('['.repeat(100_000)).kind).toBe('refused');
  });

  it('handles a body at the size bound (64 KiB) in one pass', () => {
    const members = Array.from({ length: 4000 }, (_, i) => `"k${4000 - i}":"${'v'.repeat(8)}"`).join(',');
    const text = canonicalText(`{${members}}`);
    expect(text.startsWith('{"k1":')).toBe(true);
    expect(canonicalText(`"${'x'.repeat(65_000)}"`).length).toBe(65_002);
  });
});
