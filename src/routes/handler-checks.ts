/**
 * The checks the upstream's handlers run after schema validation (they answer 400 without
 * `code`). Reproduced so that such input is rejected here, before any upstream request.
 * Sources: upstream src/helpers.ts (isValidPrincipal), src/api/query-helpers.ts.
 */
import { c32addressDecode } from 'c32check';

const CONTRACT_NAME = /^[a-zA-Z]([a-zA-Z0-9]|[-_])*$/;
const CONTRACT_NAME_MAX = 128;

function isValidC32Address(address: string): boolean {
  try {
    c32addressDecode(address);
    return true;
  } catch {
    return false;
  }
}

/** Mirrors upstream isValidPrincipal: `split('.')` keeps only the first two parts, on purpose. */
export function isValidPrincipal(principal: string): boolean {
  if (!principal) return false;
  if (!principal.includes('.')) return isValidC32Address(principal);
  const [address = '', name = ''] = principal.split('.');
  return isValidC32Address(address) && name.length >= 1 && name.length <= CONTRACT_NAME_MAX && CONTRACT_NAME.test(name);
}

export const invalidPrincipalMessage = (principal: string): string => `invalid STX address "${principal}"`;

/** validateRequestHexInput: a lowercase `0x`, an even digit count, hex digits only. */
export function hexInputError(hex: string): string | undefined {
  if (!hex.startsWith('0x')) return 'Hex string is missing the "0x" prefix';
  if (hex.length % 2 !== 0) return 'Hex string is an odd number of digits';
  if (!/^[0-9a-fA-F]*$/.test(hex.slice(2))) return 'Invalid hash characters';
  return undefined;
}

export type UntilBlock =
  | { kind: 'absent' }
  /** Present but empty: ignored for the height, yet it still drops the pending-balance fields. */
  | { kind: 'empty' }
  | { kind: 'height'; height: number }
  | { kind: 'hash'; hash: string };

/** parseUntilBlockQuery (contract §2.1): returns the parsed form or the 400 message. */
export function parseUntilBlock(value: string | undefined, unanchored: boolean): UntilBlock | string {
  if (value === undefined) return { kind: 'absent' };
  if (value === '') return { kind: 'empty' };
  if (unanchored) return "can't handle both 'unanchored=true' and 'until_block' in the same request";
  if (/^0x/i.test(value)) return { kind: 'hash', hash: value };
  // Number.parseInt on purpose: the upstream reads "123abc" as 123.
  const height = Number.parseInt(value, 10);
  if (Number.isNaN(height) || height < 1) return 'Unexpected integer value for block height path parameter';
  return { kind: 'height', height };
}

/** The canonical query value that makes the upstream read the same until_block. */
export function untilBlockQueryValue(until: UntilBlock): string | undefined {
  switch (until.kind) {
    case 'absent':
      return undefined;
    case 'empty':
      return '';
    case 'height':
      return String(until.height);
    case 'hash':
      return until.hash;
  }
}
