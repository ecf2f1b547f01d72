/**
 * The popular contracts of the simulated chain: their Clarity sources, ABIs, the state their
 * public functions change (a data var, a map, fungible and non-fungible tokens) and their
 * read-only functions, evaluated against that state. Pure: no I/O, no clock.
 */
import { Cl, type ClarityValue } from '@stacks/transactions';

export const CONTRACT_NAMES = ['counter', 'wallet-token', 'collectibles'] as const;
export type ContractName = (typeof CONTRACT_NAMES)[number];

/** Every contract's state after some block: shared between snapshots, replaced when a call changes it. */
export interface ContractState {
  /** counter: the `counter` data var. */
  counter: bigint;
  /** counter: the `scores` map (principal → uint). */
  scores: ReadonlyMap<string, bigint>;
  /** wallet-token: the `wtoken` fungible token balances. */
  tokens: ReadonlyMap<string, bigint>;
  tokenSupply: bigint;
  /** collectibles: owner of each `collectible` id, and the `last-id` data var. */
  nftOwners: ReadonlyMap<bigint, string>;
  lastNftId: bigint;
}

export const EMPTY_CONTRACT_STATE: ContractState = {
  counter: 0n,
  scores: new Map(),
  tokens: new Map(),
  tokenSupply: 0n,
  nftOwners: new Map(),
  lastNftId: 0n,
};

export const SOURCES: Record<ContractName, string> = {
  counter: [
    '(define-data-var counter uint u0)',
    '(define-map scores principal uint)',
    '(define-public (increment) (begin (var-set counter (+ (var-get counter) u1)) (ok (var-get counter))))',
    '(define-public (set-score (score uint)) (begin (map-set scores tx-sender score) (ok true)))',
    '(define-read-only (get-counter) (var-get counter))',
    '(define-read-only (get-score (who principal)) (default-to u0 (map-get? scores who)))',
    '',
  ].join('\n'),
  'wallet-token': [
    '(define-fungible-token wtoken)',
    '(define-public (transfer (amount uint) (sender principal) (recipient principal) (memo (optional (buff 34))))',
    '  (begin (asserts! (is-eq tx-sender sender) (err u4)) (ft-transfer? wtoken amount sender recipient)))',
    '(define-public (mint (amount uint) (recipient principal)) (ft-mint? wtoken amount recipient))',
    '(define-read-only (get-balance (who principal)) (ok (ft-get-balance wtoken who)))',
    '(define-read-only (get-total-supply) (ok (ft-get-supply wtoken)))',
    '',
  ].join('\n'),
  collectibles: [
    '(define-non-fungible-token collectible uint)',
    '(define-data-var last-id uint u0)',
    '(define-public (mint (recipient principal))',
    '  (let ((id (+ (var-get last-id) u1))) (try! (nft-mint? collectible id recipient)) (var-set last-id id) (ok id)))',
    '(define-read-only (get-last-token-id) (ok (var-get last-id)))',
    '(define-read-only (get-owner (id uint)) (ok (nft-get-owner? collectible id)))',
    '',
  ].join('\n'),
};

const fn = (name: string, access: 'public' | 'read_only', args: Array<[string, unknown]>, outputs: unknown) => ({
  name,
  access,
  args: args.map(([argName, type]) => ({ name: argName, type })),
  outputs: { type: outputs },
});
const responseOf = (ok: unknown, error: unknown = 'none') => ({ response: { ok, error } });

/** The ABIs as `GET /v2/contracts/interface` returns them (stacks-core's ContractInterface). */
export const INTERFACES: Record<ContractName, unknown> = {
  counter: {
    functions: [
      fn('increment', 'public', [], responseOf('uint128')),
      fn('set-score', 'public', [['score', 'uint128']], responseOf('bool')),
      fn('get-counter', 'read_only', [], 'uint128'),
      fn('get-score', 'read_only', [['who', 'principal']], 'uint128'),
    ],
    variables: [{ name: 'counter', type: 'uint128', access: 'variable' }],
    maps: [{ name: 'scores', key: 'principal', value: 'uint128' }],
    fungible_tokens: [],
    non_fungible_tokens: [],
    epoch: 'Epoch30',
    clarity_version: 'Clarity3',
  },
  'wallet-token': {
    functions: [
      fn(
        'mint',
        'public',
        [
          ['amount', 'uint128'],
          ['recipient', 'principal'],
        ],
        responseOf('bool', 'uint128'),
      ),
      fn(
        'transfer',
        'public',
        [
          ['amount', 'uint128'],
          ['sender', 'principal'],
          ['recipient', 'principal'],
          ['memo', { optional: { buffer: { length: 34 } } }],
        ],
        responseOf('bool', 'uint128'),
      ),
      fn('get-balance', 'read_only', [['who', 'principal']], responseOf('uint128')),
      fn('get-total-supply', 'read_only', [], responseOf('uint128')),
    ],
    variables: [],
    maps: [],
    fungible_tokens: [{ name: 'wtoken' }],
    non_fungible_tokens: [],
    epoch: 'Epoch30',
    clarity_version: 'Clarity3',
  },
  collectibles: {
    functions: [
      fn('mint', 'public', [['recipient', 'principal']], responseOf('uint128', 'uint128')),
      fn('get-last-token-id', 'read_only', [], responseOf('uint128')),
      fn('get-owner', 'read_only', [['id', 'uint128']], responseOf({ optional: 'principal' })),
    ],
    variables: [{ name: 'last-id', type: 'uint128', access: 'variable' }],
    maps: [],
    fungible_tokens: [],
    non_fungible_tokens: [{ name: 'collectible', type: 'uint128' }],
    epoch: 'Epoch30',
    clarity_version: 'Clarity3',
  },
};

export function isContractName(name: string): name is ContractName {
  return (CONTRACT_NAMES as readonly string[]).includes(name);
}

/** A read-only call's result, or the node's `cause` when it cannot run. */
export type ReadResult = { ok: true; value: ClarityValue } | { ok: false; cause: string };

const principalArg = (arg: ClarityValue | undefined): string | undefined =>
  arg && (arg.type === 'address' || arg.type === 'contract') ? arg.value : undefined;
const uintArg = (arg: ClarityValue | undefined): bigint | undefined => (arg && arg.type === 'uint' ? BigInt(arg.value) : undefined);

export function callReadOnly(contract: ContractName, state: ContractState, name: string, args: ClarityValue[]): ReadResult {
  const bad = (): ReadResult => ({ ok: false, cause: `Unchecked(TypeValueError(${name}))` });
  switch (`${contract}.${name}`) {
    case 'counter.get-counter':
      return { ok: true, value: Cl.uint(state.counter) };
    case 'counter.get-score': {
      const who = principalArg(args[0]);
      return who ? { ok: true, value: Cl.uint(state.scores.get(who) ?? 0n) } : bad();
    }
    case 'wallet-token.get-balance': {
      const who = principalArg(args[0]);
      return who ? { ok: true, value: Cl.ok(Cl.uint(state.tokens.get(who) ?? 0n)) } : bad();
    }
    case 'wallet-token.get-total-supply':
      return { ok: true, value: Cl.ok(Cl.uint(state.tokenSupply)) };
    case 'collectibles.get-last-token-id':
      return { ok: true, value: Cl.ok(Cl.uint(state.lastNftId)) };
    case 'collectibles.get-owner': {
      const id = uintArg(args[0]);
      if (id === undefined) return bad();
      const owner = state.nftOwners.get(id);
      return { ok: true, value: Cl.ok(owner ? Cl.some(Cl.principal(owner)) : Cl.none()) };
    }
    default:
      return { ok: false, cause: `Unchecked(UndefinedFunction("${name}"))` };
  }
}

/** `(map-get? map key)`: only counter's `scores` exists. */
export function mapEntry(contract: ContractName, state: ContractState, map: string, key: ClarityValue): ClarityValue | undefined {
  if (contract !== 'counter' || map !== 'scores') return undefined;
  const who = principalArg(key);
  const score = who === undefined ? undefined : state.scores.get(who);
  return score === undefined ? Cl.none() : Cl.some(Cl.uint(score));
}

export function dataVar(contract: ContractName, state: ContractState, name: string): ClarityValue | undefined {
  if (contract === 'counter' && name === 'counter') return Cl.uint(state.counter);
  if (contract === 'collectibles' && name === 'last-id') return Cl.uint(state.lastNftId);
  return undefined;
}

/**
 * Library contracts (`lib-0`, `lib-1`, …): a real chain has thousands of deployed contracts and
 * wallets and dApps fetch the interfaces of many of them (a token list, a swap's routers), so an
 * interface cache meets many first requests. These hold no state: one read-only function
 * returning the contract's own number. Deployed at genesis when ChainOptions.libraryContracts > 0.
 */
const LIBRARY = /^lib-(\d{1,4})$/;

export const libraryName = (index: number): string => `lib-${index}`;

/** The library contract's number, or undefined for any other name. */
export function libraryIndex(name: string): number | undefined {
  const m = LIBRARY.exec(name);
  return m ? Number(m[1]) : undefined;
}

export const librarySource = (index: number): string => `(define-read-only (get-version) u${index})`;

export const libraryInterface = (): unknown => ({
  functions: [fn('get-version', 'read_only', [], 'uint128')],
  variables: [],
  maps: [],
  fungible_tokens: [],
  non_fungible_tokens: [],
  epoch: 'Epoch30',
  clarity_version: 'Clarity3',
});

export function callLibrary(index: number, name: string): ReadResult {
  return name === 'get-version' ? { ok: true, value: Cl.uint(BigInt(index)) } : { ok: false, cause: `Unchecked(UndefinedFunction("${name}"))` };
}
