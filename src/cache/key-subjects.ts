/**
 * What a surface entry is about, written into its key (surface/plan.ts) so that an admin purge
 * by principal, transaction or block finds it by the key alone (purge.ts), in the memory tier and
 * with SCAN MATCH in Redis. The key holds the URL as forwarded, but a URL is not a reliable
 * index: a principal may be spelt with percent-escapes or lower case, it may be a prefix of
 * another (`SP…A` and `SP…AB`), and a long URL is hashed away. So each subject is normalised to
 * the one form the upstream reads it as, and the segment is delimited on both sides:
 * `,p=SP…A,t=0x…,b=123,`, or `-` for none. Every value is drawn from `[0-9A-Za-z._-]`, so a
 * segment never holds `:` (the key's separator), `,` or `=` (its own), nor a glob character. Pure.
 */

/** The kinds of subject: a principal (`p`), a transaction (`t`), a block (`b`). */
export type SubjectKind = 'p' | 't' | 'b';

export interface Subject {
  kind: SubjectKind;
  value: string;
}

/** The segment of a key with no subject. */
export const NO_SUBJECTS = '-';

/** A c32 address (what the upstream's validatePrincipal could decode is checked by the upstream), then an optional contract name. */
const PRINCIPAL = /^([0-9A-Za-z]{1,41})(?:\.([a-zA-Z][a-zA-Z0-9_-]{0,127}))?$/;
const HASH = /^(?:0x|0X)?([0-9a-fA-F]{64})$/;
const HEIGHT = /^[0-9]{1,15}$/;

/** Percent-escapes decoded (the upstream's router decodes path parameters); undefined when they do not decode. */
function decoded(text: string): string | undefined {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * A principal in the one form the upstream reads it as: c32 decoding normalises the address
 * (upper case; `O` is `0`, `I` and `L` are `1`), the contract name is kept as written. Undefined
 * for anything that is not principal-shaped (the upstream refuses it, so no entry exists).
 */
export function normalPrincipal(text: string): string | undefined {
  const plain = decoded(text);
  const parts = plain === undefined ? undefined : PRINCIPAL.exec(plain);
  if (!parts) return undefined;
  const address = (parts[1] as string).toUpperCase().replace(/O/g, '0').replace(/[IL]/g, '1');
  return parts[2] === undefined ? address : `${address}.${parts[2]}`;
}

/** A transaction id as `0x` and 64 lower-case hex digits (the upstream's reading: 0x optional, any case). */
export function normalTx(text: string): string | undefined {
  const plain = decoded(text);
  const hex = plain === undefined ? undefined : HASH.exec(plain)?.[1];
  return hex === undefined ? undefined : `0x${hex.toLowerCase()}`;
}

/** A block reference: a height in decimal without leading zeros, a hash as a transaction id is, or `latest`. */
export function normalBlockRef(text: string): string | undefined {
  const plain = decoded(text);
  if (plain === undefined) return undefined;
  if (plain === 'latest') return plain;
  if (HEIGHT.test(plain)) return String(Number(plain));
  return normalTx(plain);
}

const NORMALISE: Record<SubjectKind, (text: string) => string | undefined> = { p: normalPrincipal, t: normalTx, b: normalBlockRef };

/** The subject a raw request part names, normalised; undefined when it is not one. */
export function subjectOf(kind: SubjectKind, raw: string): Subject | undefined {
  const value = NORMALISE[kind](raw);
  return value === undefined ? undefined : { kind, value };
}

/** The key segment for these subjects (duplicates once). */
export function subjectsSegment(subjects: readonly Subject[]): string {
  if (subjects.length === 0) return NO_SUBJECTS;
  const items = [...new Set(subjects.map((s) => `${s.kind}=${s.value}`))];
  return `,${items.join(',')},`;
}

/** The item a segment holds for one subject: `,p=SP…,` (delimited, so never a prefix of another). */
export const subjectItem = (subject: Subject): string => `,${subject.kind}=${subject.value},`;

/** Whether a key segment names the subject (exactly: the delimiters make a prefix no match). */
export function segmentNames(segment: string, subject: Subject): boolean {
  return segment !== NO_SUBJECTS && segment.includes(subjectItem(subject));
}
