/**
 * Deterministic key pairs: the simulated wallets, the background senders and the contract
 * deployer, each with a secp256k1 key (so they sign real transactions) and its testnet address.
 */
import { createHash } from 'node:crypto';
import { privateKeyToAddress } from '@stacks/transactions';

export interface Wallet {
  /** The name it was derived from (`wallet-3`, `bot-1`, `deployer`). */
  name: string;
  /** Compressed private key, hex (what @stacks/transactions signs with). */
  key: string;
  address: string;
}

/** The same name and seed always give the same key, so two runs simulate the same chain. */
export function deriveWallet(seed: string, name: string): Wallet {
  const key = `${createHash('sha256').update(`${seed}:${name}`).digest('hex')}01`;
  return { name, key, address: privateKeyToAddress(key, 'testnet') };
}

export function deriveWallets(seed: string, prefix: string, count: number): Wallet[] {
  return Array.from({ length: count }, (_, i) => deriveWallet(seed, `${prefix}-${i}`));
}
