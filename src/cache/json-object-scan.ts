/**
 * Splits a top-level JSON object into its members without re-serializing them: each value
 * comes back as the exact bytes the upstream sent, so list answers can be rebuilt
 * byte-for-byte from cached members. Returns undefined for anything that is not an object.
 */
export interface RawMember {
  key: string;
  raw: string;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

function skipWhitespace(text: string, at: number): number {
  let i = at;
  while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  return i;
}

/** Index just past the JSON string that starts at `at` (which must be a quote). */
function endOfString(text: string, at: number): number {
  let i = at + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') i += 2;
    else if (ch === '"') return i + 1;
    else i++;
  }
  return -1;
}

/** Index just past the JSON value that starts at `at`. */
function endOfValue(text: string, at: number): number {
  if (text[at] === '"') return endOfString(text, at);
  let depth = 0;
  let i = at;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      i = endOfString(text, i);
      if (i < 0) return -1;
      continue;
    }
    if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      if (depth === 0) return i;
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (ch === ',' || WHITESPACE.has(ch as string))) return i;
    i++;
  }
  return depth === 0 ? i : -1;
}

export function scanObjectMembers(text: string): RawMember[] | undefined {
  const members: RawMember[] = [];
  let i = skipWhitespace(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipWhitespace(text, i + 1);
  if (text[i] === '}') return skipWhitespace(text, i + 1) === text.length ? members : undefined;
  for (;;) {
    if (text[i] !== '"') return undefined;
    const keyEnd = endOfString(text, i);
    if (keyEnd < 0) return undefined;
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWhitespace(text, keyEnd);
    if (text[i] !== ':') return undefined;
    const valueStart = skipWhitespace(text, i + 1);
    const valueEnd = endOfValue(text, valueStart);
    if (valueEnd < 0 || valueEnd === valueStart) return undefined;
    members.push({ key, raw: text.slice(valueStart, valueEnd) });
    i = skipWhitespace(text, valueEnd);
    if (text[i] === ',') {
      i = skipWhitespace(text, i + 1);
      continue;
    }
    if (text[i] === '}') return skipWhitespace(text, i + 1) === text.length ? members : undefined;
    return undefined;
  }
}
