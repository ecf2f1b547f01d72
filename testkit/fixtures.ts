/**
 * Recorded upstream responses (`shared/fixtures/recorded-regtest.jsonl`): 1,472 real answers of a
 * v8.13.6 upstream serving a regtest chain (blocks 1..50, 135 mined txs, one pending tx).
 * See `shared/fixtures/README.md` for the format.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface RecordedHeaders {
  'content-type'?: string;
  etag?: string;
  'cache-control'?: string;
  /** Only on 302s. */
  location?: string;
}

export interface Recording {
  /** Path and raw query exactly as sent to the upstream. */
  path: string;
  status: number;
  headers: RecordedHeaders;
  /** Exact body text. */
  body: string;
}

const FIXTURE_FILE = 'recorded-regtest.jsonl';

/** Well-known values of the recorded chain, for tests that need a concrete id, hash or height. */
export const RECORDED = {
  tipHeight: 50,
  tipIndexHash: '0xf5be33abc4e508bdaf2191e88339372edcb3358c44e2a31e1b9b44f2880dde09',
  tipBlockHash: '0x5705546ec6741f77957bb3e73bf795dcf120c0a869c1d408396e7e30a3b2f94f',
  tipBurnHeight: 136,
  /** `mempool_updated_at`, the ETag value of the mempool routes. */
  mempoolEtag: '1795327171.909223',
  pendingTxId: '0x4939221903f99489bca9df24d3417d430c7c3998e34e4d044e9fc30e6866ece4',
  /** A token transfer mined in block 1. */
  confirmedTxId: '0xcba511741b230bd85cb5b3b10d26e0b92695d4a83f95c260cad82a40cd764235',
  confirmedTxHeight: 1,
  /** A well-formed id the chain does not know (the upstream answers 404). */
  unknownTxId: '0xabababababababababababababababababababababababababababababababab',
  /** Sender of the pending tx: 24 mined txs, so its principal and principal_mempool ETags differ. */
  principal: 'ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84',
  /** A principal without transactions: the upstream sends no ETag and `no-store` for it. */
  principalWithoutTxs: 'SN3TJ7J6DR9KFQXQGK9SY7M7AEJT33C8NV5CZG0D1',
  /** A contract with 9 recorded events. */
  contractId: 'ST000000000000000000002AMW42H.pox-4',
  /** Holds two Stacks blocks (20 and 21); by_burn_block_height answers the higher one. */
  burnHeightWithBlock: 125,
  burnHeightWithBlockHeight: 21,
  /** A burn block without Stacks blocks (404 that still carries the chain-tip ETag). */
  burnHeightWithoutBlock: 106,
} as const;

/** The folder holding package.json above `from` (this file's folder by default, also under dist/). */
export function findProjectRoot(from = path.dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json in ${from} or above`);
    dir = parent;
  }
  return dir;
}

/** `$FIXTURES_DIR/recorded-regtest.jsonl`, else `<project root>/../shared/fixtures/recorded-regtest.jsonl` */
export function recordingsFile(): string {
  const dir = process.env.FIXTURES_DIR;
  return dir ? path.resolve(dir, FIXTURE_FILE) : path.resolve(findProjectRoot(), '../shared/fixtures', FIXTURE_FILE);
}

let recordings: Recording[] | undefined;
let byUrl: Map<string, Recording> | undefined;
let byPath: Map<string, Recording[]> | undefined;

/** All recordings in file order; read once per process. Treat the result as read-only. */
export function loadRecordings(): Recording[] {
  recordings ??= readFileSync(recordingsFile(), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Recording);
  return recordings;
}

/** Splits a request target into its path and raw query (without `?`, empty when absent). */
export function splitUrl(url: string): { path: string; query: string } {
  const at = url.indexOf('?');
  return at < 0 ? { path: url, query: '' } : { path: url.slice(0, at), query: url.slice(at + 1) };
}

/** The recording of exactly this path and raw query, if any. */
export function findRecording(url: string): Recording | undefined {
  byUrl ??= new Map(loadRecordings().map((rec) => [rec.path, rec]));
  return byUrl.get(url);
}

/** Every recording of this path, whatever its query. */
export function recordingsForPath(urlPath: string): readonly Recording[] {
  if (!byPath) {
    byPath = new Map();
    for (const rec of loadRecordings()) {
      const key = splitUrl(rec.path).path;
      const group = byPath.get(key);
      if (group) group.push(rec);
      else byPath.set(key, [rec]);
    }
  }
  return byPath.get(urlPath) ?? [];
}

/** The parsed body of the recording of `url`; throws when there is none. */
export function recordedJson<T = Record<string, unknown>>(url: string): T {
  const rec = findRecording(url);
  if (!rec) throw new Error(`no recording of ${url}`);
  return JSON.parse(rec.body) as T;
}

/** Recordings whose path (query included) matches `pattern`, with the given status. */
export function recordingsMatching(pattern: RegExp, status = 200): Recording[] {
  return loadRecordings().filter((rec) => rec.status === status && pattern.test(rec.path));
}
