/** Hashes, hex ids, times and argument checks that the fake's modules share. */
import { createHash } from 'node:crypto';

export const HASH_HEX = /^(0x)?[a-fA-F0-9]{64}$/;

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function unquote(tag: string): string {
  return tag.replace(/^"|"$/g, '');
}

export function withHexPrefix(hex: string): string {
  return hex.startsWith('0x') ? hex : `0x${hex}`;
}

export function trimSlash(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path;
}

export function isoTime(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}

/** `1795327171.909223` (Postgres `date_part('epoch', …)::text`) as integer microseconds. */
export function parseEpochMicros(epoch: string): number {
  const [seconds = '0', fraction = ''] = epoch.split('.');
  return Number(seconds) * 1_000_000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

export function assertCount(n: number, min: number, what: string): void {
  if (!Number.isInteger(n) || n < min) throw new RangeError(`${what} must be an integer >= ${min}`);
}
