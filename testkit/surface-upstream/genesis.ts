/**
 * Builds the simulated chain's starting point: funded wallets and background senders, the
 * popular contracts deployed, tokens and NFTs minted, BNS names, and some blocks of history so
 * that many principals already have confirmed activity (and so principal ETags).
 */
import { CONTRACT_NAMES, libraryName, librarySource, SOURCES } from './contracts.js';
import { acceptTransaction, decodeTransaction, genesisSnapshot, mineBlock, type Snapshot } from './model.js';
import { Cl, signContractCall, signDeploy, signTransfer } from './signing.js';
import { deriveWallet, deriveWallets, type Wallet } from './wallets.js';

export interface ChainOptions {
  seed?: string;
  /** Principals the clients act as (they send, poll, hold tokens). */
  wallets?: number;
  /** Background senders: the rest of the world's transactions. */
  bots?: number;
  /** A burn block every this many Stacks blocks. */
  burnEvery?: number;
  /** Blocks of history before the run starts. */
  historyBlocks?: number;
  /** Library contracts deployed at genesis (contracts.ts; default 0): many distinct interfaces to fetch. */
  libraryContracts?: number;
  /**
   * Pending transactions that are never mined (default 0): senders whose next nonce is missing
   * (a gap waits, model.ts), as on mainnet where hundreds of stuck transactions sit below the
   * fresh ones, so the mempool is larger than a watcher's few pages.
   */
  stuckBacklog?: number;
}

export interface ChainCast {
  deployer: Wallet;
  wallets: Wallet[];
  bots: Wallet[];
}

const STX = 1_000_000n;

function mustAccept(s: Snapshot, raw: string, time: number): Snapshot {
  const accepted = acceptTransaction(s, decodeTransaction(raw, time));
  if (!accepted.ok) throw new Error(`genesis transaction rejected: ${accepted.reason}`);
  return accepted.snapshot;
}

export async function buildGenesis(options: ChainOptions, nowSeconds: number, blockSeconds: number): Promise<{ snapshot: Snapshot; cast: ChainCast }> {
  const seed = options.seed ?? 'surface';
  const deployer = deriveWallet(seed, 'deployer');
  const wallets = deriveWallets(seed, 'wallet', options.wallets ?? 200);
  const bots = deriveWallets(seed, 'bot', options.bots ?? 20);
  const history = options.historyBlocks ?? 24;
  const stuckPerSender = 5;
  const stuck = deriveWallets(seed, 'stuck', Math.ceil((options.stuckBacklog ?? 0) / stuckPerSender));
  const balances = new Map<string, bigint>([[deployer.address, 1_000_000n * STX]]);
  for (const w of [...wallets, ...bots, ...stuck]) balances.set(w.address, 10_000n * STX);
  const names = new Map<string, string>();
  wallets.forEach((w, i) => {
    if (i % 4 === 0) names.set(`${w.name}.btc`, w.address);
  });
  let time = nowSeconds - (history + 1) * blockSeconds;
  let s = genesisSnapshot(deployer.address, balances, names, time, options.burnEvery ?? 3);
  let deployerNonce = 0;
  for (const name of CONTRACT_NAMES) s = mustAccept(s, await signDeploy(deployer, name, SOURCES[name], deployerNonce++), time);
  for (let i = 0; i < (options.libraryContracts ?? 0); i++)
    s = mustAccept(s, await signDeploy(deployer, libraryName(i), librarySource(i), deployerNonce++), time);
  s = mineBlock(s, (time += blockSeconds));
  // Tokens for every second wallet, an NFT for every fifth.
  for (const [i, w] of wallets.entries()) {
    if (i % 2 === 0)
      s = mustAccept(
        s,
        await signContractCall(
          deployer,
          `${deployer.address}.wallet-token`,
          'mint',
          [Cl.uint(1_000n + BigInt(i)), Cl.principal(w.address)],
          deployerNonce++,
          1_000n,
        ),
        time,
      );
    if (i % 5 === 0)
      s = mustAccept(s, await signContractCall(deployer, `${deployer.address}.collectibles`, 'mint', [Cl.principal(w.address)], deployerNonce++, 1_000n), time);
  }
  s = mineBlock(s, (time += blockSeconds));
  // History: each block, a few bots pay some wallets and set scores.
  const botNonces = bots.map(() => 0);
  for (let b = 0; b < history - 2; b++) {
    for (let k = 0; k < 3; k++) {
      const botIndex = (b * 3 + k) % bots.length;
      const bot = bots[botIndex] as Wallet;
      const target = wallets[(b * 7 + k * 13) % wallets.length] as Wallet;
      const raw =
        k === 2
          ? await signContractCall(bot, `${deployer.address}.counter`, 'set-score', [Cl.uint(BigInt(b))], botNonces[botIndex]!, 500n)
          : await signTransfer(bot, target.address, 1_000n + BigInt(b), botNonces[botIndex]!, 300n);
      botNonces[botIndex]!++;
      s = mustAccept(s, raw, time);
    }
    s = mineBlock(s, (time += blockSeconds));
  }
  // The stuck backlog: nonces 1.. with nonce 0 never sent, so none of them can be mined.
  let left = options.stuckBacklog ?? 0;
  for (const [i, sender] of stuck.entries()) {
    for (let n = 1; n <= stuckPerSender && left > 0; n++, left--) {
      const target = wallets[(i * 11 + n) % wallets.length] as Wallet;
      s = mustAccept(s, await signTransfer(sender, target.address, 1_000n, n, 180n + BigInt(n)), time);
    }
  }
  return { snapshot: s, cast: { deployer, wallets, bots } };
}
