/**
 * The checks the upstream's handlers run after schema validation (they answer 400 without
 * `code`). Reproduced so that such input is rejected here, before any upstream request.
 * Sources: upstream src/helpers.ts (isValidPrincipal), src/api/query-helpers.ts.
 */
import { c32addressDecode } from 'c32check';
import { integerText } from './param-kinds.js';

const CONTRACT_NAME = /^[a-zA-Z]([a-zA-Z0-9]|[-_])*$/;
const CONTRACT_NAME_MAX = 128;
/**
 * The longest c32 address: "S", a version character and at most 39 characters for the 20-byte
 * hash and 4-byte checksum (the upstream's own address pattern stops at 41 too). c32 decoding
 * is quadratic in its input (a 16 KB string costs 80 ms), so nothing longer is decoded.
 */
export const MAX_ADDRESS_LENGTH = 41;
/** The longest principal the handler can find valid: an address, ".", and a 128-character name. */
export const MAX_PRINCIPAL_LENGTH = MAX_ADDRESS_LENGTH + 1 + CONTRACT_NAME_MAX;

export function isValidC32Address(address: string): boolean {
  try {
    c32addressDecode(address);
    return true;
  } catch {
    return false;
  }
}

/**
 * Mirrors upstream isValidPrincipal: like its `split('.')`, only the address and the name (the
 * text up to a second ".") are checked. Lengths are checked before anything is decoded: a
 * principal longer than any valid one, or an address part longer than 41, is invalid at once,
 * so the check is linear in the input. `isValidAddress` is the c32 decoder (a parameter so
 * that tests can count what reaches it).
 */
export function isValidPrincipal(principal: string, isValidAddress: (address: string) => boolean = isValidC32Address): boolean {
  if (!principal || principal.length > MAX_PRINCIPAL_LENGTH) return false;
  const dot = principal.indexOf('.');
  if (dot < 0) return principal.length <= MAX_ADDRESS_LENGTH && isValidAddress(principal);
  const nextDot = principal.indexOf('.', dot + 1);
  const name = principal.slice(dot + 1, nextDot < 0 ? undefined : nextDot);
  if (dot > MAX_ADDRESS_LENGTH || name.length < 1 || name.length > CONTRACT_NAME_MAX || !CONTRACT_NAME.test(name)) return false;
  return isValidAddress(principal.slice(0, dot));
}

/**
 * Exactly one principal: an address, or an address, one "." and a contract name, each valid.
 * Stricter than isValidPrincipal, which, like the upstream's `split('.')`, lets anything follow
 * a second ".".
 */
export function isExactPrincipal(principal: string, isValidAddress: (address: string) => boolean = isValidC32Address): boolean {
  const dot = principal.indexOf('.');
  return (dot < 0 || principal.indexOf('.', dot + 1) < 0) && isValidPrincipal(principal, isValidAddress);
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
      // Digits, never `1e+21`: the upstream's parseInt would read that as block 1.
      return integerText(until.height);
    case 'hash':
      return until.hash;
  }
}
