/**
 * The canonical form of a POST read's JSON body, for its cache key only (the body forwarded is
 * the one the client sent, byte for byte). Two bodies share a canonical form only when a JSON
 * reader that keeps number literals (the node's serde_json) reads them as the same value:
 * whitespace dropped, object members sorted by key (UTF-16 code units), strings decoded and
 * re-escaped one way (JSON.stringify's), number literals kept exactly as written (`1.0` and `1`
 * stay apart: a reader may tell them apart). Refused, so the answer is forwarded but not stored:
 * a body that is not UTF-8 JSON, one with a duplicate key in an object (serde refuses those for
 * the node's request structs; other readers keep the first or the last), or one nested deeper
 * than MAX_DEPTH. One pass over the text plus a sort per object: linear up to the sorts. Pure.
 */

/** Deeper nesting is refused: no read body the node takes is more than a few levels deep. */
export const MAX_DEPTH = 64;

export type CanonicalJson = { kind: 'json'; text: string } | { kind: 'refused'; why: string };

class Refusal extends Error {}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// A run of string characters that need no escape (JSON forbids raw control characters in strings).
// eslint-disable-next-line no-control-regex
const STRING_PLAIN = /[^"\\\u0000-\u001f]*/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The canonical text of `body`, or why it has none. */
export function canonicalJson(body: Uint8Array): CanonicalJson {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { kind: 'refused', why: 'not UTF-8' };
  }
  try {
    const parser = new Parser(text);
    const value = parser.value(0);
    parser.end();
    return { kind: 'json', text: value };
  } catch (error) {
    if (error instanceof Refusal) return { kind: 'refused', why: error.message };
    throw error;
  }
}

class Parser {
  private at = 0;

  constructor(private readonly text: string) {}

  end(): void {
    this.skipWhitespace();
    if (this.at !== this.text.length) this.refuse('text after the value');
  }

  value(depth: number): string {
    this.skipWhitespace();
    const char = this.text[this.at];
    switch (char) {
      case '{':
        return this.object(depth + 1);
      case '[':
        return this.array(depth + 1);
      case '"':
        return JSON.stringify(this.string());
      case 't':
        return this.literal('true');
      case 'f':
        return this.literal('false');
      case 'n':
        return this.literal('null');
      default:
        return this.number();
    }
  }

  private object(depth: number): string {
    if (depth > MAX_DEPTH) this.refuse('nested too deep');
    this.at++; // {
    const members: Array<[string, string]> = [];
    this.skipWhitespace();
    if (this.text[this.at] === '}') {
      this.at++;
      return '{}';
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.at] !== '"') this.refuse('an object key is not a string');
      const key = this.string();
      this.skipWhitespace();
      if (this.text[this.at] !== ':') this.refuse('no colon after an object key');
      this.at++;
      members.push([key, this.value(depth)]);
      this.skipWhitespace();
      const next = this.text[this.at++];
      if (next === '}') break;
      if (next !== ',') this.refuse('no comma between object members');
    }
    members.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (let i = 1; i < members.length; i++) {
      if ((members[i] as [string, string])[0] === (members[i - 1] as [string, string])[0]) this.refuse('a duplicate object key');
    }
    return `{${members.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
  }

  private array(depth: number): string {
    if (depth > MAX_DEPTH) this.refuse('nested too deep');
    this.at++; // [
    const items: string[] = [];
    this.skipWhitespace();
    if (this.text[this.at] === ']') {
      this.at++;
      return '[]';
    }
    for (;;) {
      items.push(this.value(depth));
      this.skipWhitespace();
      const next = this.text[this.at++];
      if (next === ']') break;
      if (next !== ',') this.refuse('no comma between array items');
    }
    return `[${items.join(',')}]`;
  }

  /** A JSON string at `at` (its opening quote), decoded. */
  private string(): string {
    this.at++; // "
    let out = '';
    for (;;) {
      STRING_PLAIN.lastIndex = this.at;
      const plain = STRING_PLAIN.exec(this.text);
      const run = plain ? plain[0] : '';
      out += run;
      this.at += run.length;
      const char = this.text[this.at];
      if (char === '"') {
        this.at++;
        return out;
      }
      if (char !== '\\') this.refuse(char === undefined ? 'an unterminated string' : 'a control character in a string');
      const escape = this.text[this.at + 1] ?? '';
      if (escape === 'u') {
        const hex = this.text.slice(this.at + 2, this.at + 6);
        if (!HEX4.test(hex)) this.refuse('a bad \\u escape');
        out += String.fromCharCode(parseInt(hex, 16));
        this.at += 6;
      } else {
        const decoded = ESCAPES[escape];
        if (decoded === undefined) this.refuse('a bad escape');
        out += decoded;
        this.at += 2;
      }
    }
  }

  private number(): string {
    NUMBER.lastIndex = this.at;
    const match = NUMBER.exec(this.text);
    if (!match || match[0] === '') this.refuse('not a JSON value');
    const literal = (match as RegExpExecArray)[0];
    this.at += literal.length;
    return literal;
  }

  private literal(word: string): string {
    if (!this.text.startsWith(word, this.at)) this.refuse('not a JSON value');
    this.at += word.length;
    return word;
  }

  private skipWhitespace(): void {
    const text = this.text;
    let at = this.at;
    for (;;) {
      const code = text.charCodeAt(at);
      if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) at++;
      else break;
    }
    this.at = at;
  }

  private refuse(why: string): never {
    throw new Refusal(why);
  }
}
