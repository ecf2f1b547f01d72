/**
 * The simulated clients of issue 15's mix: wallets following Leather's cadence
 * (read-surface.md §2.2), explorer page loads, dApp read-only calls on the popular contracts,
 * and send flows as stacks.js runs them (nonce, fee estimate, broadcast of a real signed
 * transaction, nonce again, pending-tx polling). Every exchange is recorded (times, status,
 * body, X-Cache) for the oracle and the report.
 *
 * Two drivers, one set of behaviours: `runFor` (real time, requests in parallel: the bench) and
 * `runUntil` (a virtual clock the caller advances, requests one at a time: the oracle test,
 * deterministic).
 */
import { deserializeTransaction, serializePayload } from '@stacks/transactions';
import { familyOf } from './families.js';
import type { ChainCast } from './genesis.js';
import { Cl, signContractCall, signTransfer } from './signing.js';
import type { Wallet } from './wallets.js';
import { seededRandom } from '../seeded-random.js';

export type Actor = 'wallet' | 'explorer' | 'dapp' | 'send';

export interface Exchange {
  actor: Actor;
  method: 'GET' | 'POST';
  url: string;
  body?: string;
  family: string;
  tSend: number;
  tRecv: number;
  /** 0: no answer (connection failed). */
  status: number;
  answer: string;
  xCache?: string;
}

export interface MixOptions {
  baseUrl: string;
  cast: ChainCast;
  /** Active wallets (the first n of the cast's). */
  wallets: number;
  explorers: number;
  dapps: number;
  /** Leather's intervals are divided by this (10: a 60 s balance poll every 6 s). */
  timeScale: number;
  /** Send flows started per second, over all wallets. */
  sendsPerSecond: number;
  seed?: number;
  /** Most requests in flight at once (real-time driver). */
  concurrency?: number;
  /** The clock (ms). */
  now?: () => number;
  /**
   * `easy` (the default: issue 15's mix, which the oracle tests rely on) or `real` (issue 28: as
   * hard as the traffic measured on a real mix; see PROFILES).
   */
  profile?: MixProfile;
  /** How many library contracts the chain has (ChainOptions.libraryContracts): the real profile's dApps use them. */
  libraryContracts?: number;
}

export type MixProfile = 'easy' | 'real';

/**
 * What the real profile adds to the easy one (issue 28's table of a real mix: shares of
 * mempool?address= ~13%, nonces ~16%, balances ~12% each, history ~21%, /v2/accounts ~2.3%,
 * pending tx ~2.2%, interfaces ~3%, call-read ~4.6%, broadcasts ~2.4%, fee estimates ~2%):
 * - wallets focus more often (nonces and pending list every 80 s of Leather time, not 120 s);
 * - one wallet in five (on Xverse-like calls) also reads `/v2/accounts/{p}?proof=0` with its balances;
 * - each dApp page load is a random user's: call-read bodies carry that user as `sender` and as
 *   argument (stacks.js puts the sender in every body), map_entry keys are that user's;
 * - half the dApp loads are on one of many library contracts (interface, its call-read, and the
 *   user's balance of the popular token);
 * - explorer pages show the mempool fee priorities (`/extended/v2/mempool/fees`) on most loads.
 * The caller sets the rest: a block every 2 s, ~320 sends in 75 s, the time scale.
 */
interface ProfileSettings {
  focusSeconds: number;
  accountsEveryNth: number;
  dappUserPerLoad: boolean;
  dappLibraryShare: number;
  explorerFeesShare: number;
}

const PROFILES: Record<MixProfile, ProfileSettings> = {
  easy: { focusSeconds: 120, accountsEveryNth: 0, dappUserPerLoad: false, dappLibraryShare: 0, explorerFeesShare: 0 },
  real: { focusSeconds: 80, accountsEveryNth: 5, dappUserPerLoad: true, dappLibraryShare: 0.5, explorerFeesShare: 0.6 },
};

export interface SendStats {
  started: number;
  broadcasts: number;
  accepted: number;
  /** Rejected with BadNonce or ConflictingNonceInMempool: the wallet built on a wrong nonce. */
  badNonce: number;
  otherRejections: number;
  /** A nonce read after the sender's own accepted broadcast that did not count it. */
  staleNonces: number;
  nonceChecks: number;
}

interface Task {
  at: number;
  run: () => Promise<void>;
}

const SECOND = 1000;

export class ClientMix {
  readonly exchanges: Exchange[] = [];
  readonly sends: SendStats = { started: 0, broadcasts: 0, accepted: 0, badNonce: 0, otherRejections: 0, staleNonces: 0, nonceChecks: 0 };
  private readonly queue: Task[] = [];
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly wallets: Wallet[];
  private readonly sending = new Set<string>();
  private start = 0;
  /** Recent blocks and txs the explorers saw (what they link to next). */
  private recentHeights: number[] = [];
  private recentTxIds: string[] = [];
  private pinnedTip: string | undefined;
  private readonly profile: ProfileSettings;

  constructor(private readonly o: MixOptions) {
    this.profile = PROFILES[o.profile ?? 'easy'];
    this.random = seededRandom(o.seed ?? 15);
    this.now = o.now ?? Date.now;
    this.wallets = o.cast.wallets.slice(0, o.wallets);
  }

  /** Real time: runs every task when due, in parallel, for `ms`; resolves when all answered. */
  async runFor(ms: number): Promise<void> {
    this.schedule();
    const end = this.start + ms;
    const running = new Set<Promise<void>>();
    const limit = this.o.concurrency ?? 64;
    while (this.now() < end) {
      const task = this.queue[0];
      if (!task || task.at > this.now() || running.size >= limit) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      this.queue.shift();
      const p: Promise<void> = task
        .run()
        .catch(() => undefined)
        .finally(() => running.delete(p));
      running.add(p);
    }
    await Promise.all(running);
  }

  /**
   * Virtual time: runs the tasks due up to `t` ms after the first call, one by one in order;
   * follow-ups are scheduled from each task's due time, so the sequence does not depend on
   * how long requests take.
   */
  async runUntil(t: number): Promise<void> {
    if (this.virtual === undefined) {
      this.virtual = 0;
      this.schedule();
    }
    for (let task = this.queue[0]; task && task.at <= t; task = this.queue[0]) {
      this.queue.shift();
      this.virtual = task.at;
      await task.run().catch(() => undefined);
    }
    this.virtual = t;
  }

  /** Virtual driver: the due time of the task running; undefined: real time. */
  private virtual: number | undefined;

  private clock(): number {
    return this.virtual ?? this.now();
  }

  private at(delayMs: number, run: () => Promise<void>): void {
    const task = { at: this.clock() + delayMs, run };
    // Sorted insert, stable for equal times (the queue stays small: a few tasks per actor).
    let i = this.queue.length;
    while (i > 0 && (this.queue[i - 1] as Task).at > task.at) i--;
    this.queue.splice(i, 0, task);
  }

  private every(firstMs: number, periodMs: number, run: () => Promise<void>): void {
    const loop = async (): Promise<void> => {
      await run();
      this.at(periodMs * (0.8 + 0.4 * this.random()), loop);
    };
    this.at(firstMs, loop);
  }

  private schedule(): void {
    this.start = this.clock();
    const k = this.o.timeScale;
    for (const w of this.wallets) {
      const mount = this.random() * 5 * SECOND;
      this.at(mount, () => this.walletMount(w));
      this.every(mount + (60 * SECOND) / k, (60 * SECOND) / k, () => this.walletBalances(w));
      this.every(mount + (30 * SECOND) / k, (30 * SECOND) / k, () => this.walletHistory(w));
      const focus = (this.profile.focusSeconds * SECOND) / k;
      this.every(mount + this.random() * focus, focus, () => this.walletFocus(w));
      this.every(mount + (900 * SECOND) / k, (900 * SECOND) / k, () =>
        this.get('wallet', `/extended/v1/tokens/nft/holdings?principal=${w.address}&limit=50`).then(() => undefined),
      );
    }
    for (let e = 0; e < this.o.explorers; e++) this.every(this.random() * 3 * SECOND, 5 * SECOND, () => this.explorerPage());
    for (let d = 0; d < this.o.dapps; d++) {
      const user = this.wallets[(d * 17) % this.wallets.length] as Wallet;
      if (this.profile.dappUserPerLoad) this.every(this.random() * 3 * SECOND, 4 * SECOND, () => this.dappLoadReal(this.pick(this.wallets), d));
      else this.every(this.random() * 3 * SECOND, 4 * SECOND, () => this.dappLoad(user, d));
    }
    if (this.o.sendsPerSecond > 0) this.every(2 * SECOND, SECOND / this.o.sendsPerSecond, () => this.startSend());
  }

  // ---- behaviours ----

  /** One wallet in five is on the upstream's v9 routes (/extended/v3), the others on Leather's v1/v2 calls. */
  private onV3(w: Wallet): boolean {
    return this.wallets.indexOf(w) % 5 === 4;
  }

  private async walletHistory(w: Wallet): Promise<void> {
    await this.get(
      'wallet',
      this.onV3(w) ? `/extended/v3/principals/${w.address}/transactions?limit=30` : `/extended/v1/address/${w.address}/transactions_with_transfers?limit=30`,
    );
  }

  private async walletMount(w: Wallet): Promise<void> {
    await this.walletBalances(w);
    await this.walletHistory(w);
    await this.walletFocus(w);
    await this.get('wallet', `/extended/v1/tokens/nft/holdings?principal=${w.address}&limit=50`);
    const names = await this.get('wallet', `/v1/addresses/stacks/${w.address}`);
    const name = names?.status === 200 ? (JSON.parse(names.answer) as { names?: string[] }).names?.[0] : undefined;
    if (name) await this.get('wallet', `/v1/names/${name}`);
    await this.get('wallet', '/extended/v1/info/network_block_times');
  }

  private async walletBalances(w: Wallet): Promise<void> {
    await this.get('wallet', this.onV3(w) ? `/extended/v3/principals/${w.address}/balances/stx` : `/extended/v2/addresses/${w.address}/balances/stx`);
    await this.get('wallet', `/extended/v2/addresses/${w.address}/balances/ft`);
    const nth = this.profile.accountsEveryNth;
    if (nth && this.wallets.indexOf(w) % nth === 2) await this.get('wallet', `/v2/accounts/${w.address}?proof=0`);
  }

  /** On focus: the nonce and the address's pending transactions. */
  private async walletFocus(w: Wallet): Promise<void> {
    if (this.onV3(w)) {
      await this.get('wallet', `/extended/v3/principals/${w.address}/nonces`);
      await this.get('wallet', `/extended/v3/principals/${w.address}/mempool/transactions?limit=50`);
      return;
    }
    await this.get('wallet', `/extended/v1/address/${w.address}/nonces`);
    await this.get('wallet', `/extended/v1/tx/mempool?address=${w.address}&limit=50`);
  }

  private async explorerPage(): Promise<void> {
    const page = Math.floor(this.random() * 5);
    if (this.profile.explorerFeesShare && this.random() < this.profile.explorerFeesShare) await this.get('explorer', '/extended/v2/mempool/fees');
    if (page === 0 || this.recentHeights.length === 0) {
      const blocks = await this.get('explorer', '/extended/v2/blocks?limit=10');
      if (blocks?.status === 200) this.recentHeights = (JSON.parse(blocks.answer) as { results: Array<{ height: number }> }).results.map((b) => b.height);
      await this.get('explorer', '/extended/v2/burn-blocks?limit=5');
      const txs = await this.get('explorer', '/extended/v1/tx?limit=10');
      if (txs?.status === 200) this.recentTxIds = (JSON.parse(txs.answer) as { results: Array<{ tx_id: string }> }).results.map((t) => t.tx_id);
      await this.get('explorer', '/extended/v2/blocks/average-times');
      await this.get('explorer', '/v2/info');
    } else if (page === 1) {
      const height = this.pick(this.recentHeights);
      await this.get('explorer', `/extended/v2/blocks/${height}`);
      await this.get('explorer', `/extended/${this.random() < 0.5 ? 'v3' : 'v2'}/blocks/${height}/transactions?limit=20`);
    } else if (page === 2 && this.recentTxIds.length) {
      const id = this.pick(this.recentTxIds);
      await this.get('explorer', this.random() < 0.3 ? `/extended/v3/transactions/${id}` : `/extended/v1/tx/${id}`);
      if (this.random() < 0.3) await this.get('explorer', `/extended/v1/tx/${id}/raw`);
    } else if (page === 3) {
      const w = this.pick(this.wallets);
      await this.get('explorer', `/extended/v1/address/${w.address}/balances`);
      await this.get('explorer', `/extended/v2/addresses/${w.address}/transactions?limit=20`);
    } else {
      await this.get('explorer', '/v2/pox');
      await this.get('explorer', '/extended/v2/pox/cycles?limit=5');
      await this.get('explorer', `/extended/v2/smart-contracts/status?contract_id=${this.o.cast.deployer.address}.counter`);
    }
  }

  private async dappLoad(user: Wallet, d: number): Promise<void> {
    const deployer = this.o.cast.deployer.address;
    const names = ['counter', 'wallet-token', 'collectibles'];
    const name = names[d % names.length] as string;
    const sender = JSON.stringify({ sender: user.address, arguments: [] as string[] });
    await this.get('dapp', `/v2/contracts/interface/${deployer}/${name}`);
    if (name === 'counter') {
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/counter/get-counter`, sender);
      await this.get('dapp', `/v2/data_var/${deployer}/counter/counter?proof=0`);
      await this.post(
        'dapp',
        `/v2/map_entry/${deployer}/counter/scores?proof=0`,
        JSON.stringify(Cl.serialize(Cl.principal(user.address)).replace(/^(?!0x)/, '0x')),
      );
    } else if (name === 'wallet-token') {
      const args = JSON.stringify({ sender: user.address, arguments: [`0x${Cl.serialize(Cl.principal(user.address)).replace(/^0x/, '')}`] });
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/wallet-token/get-balance`, args);
      // A snapshot read, pinned to an older block (as voting and airdrop dApps do).
      if (!this.pinnedTip || this.random() < 0.1) {
        const info = await this.get('dapp', '/extended/v2/blocks?limit=1&offset=20');
        if (info?.status === 200) this.pinnedTip = (JSON.parse(info.answer) as { results: Array<{ index_block_hash: string }> }).results[0]?.index_block_hash;
      }
      if (this.pinnedTip)
        await this.post('dapp', `/v2/contracts/call-read/${deployer}/wallet-token/get-total-supply?tip=${this.pinnedTip.replace(/^0x/, '')}`, sender);
    } else {
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/collectibles/get-last-token-id`, sender);
      await this.get('dapp', `/v2/contracts/source/${deployer}/collectibles`);
    }
  }

  /**
   * The real profile's dApp page load, for one random user: every body carries the user (as
   * stacks.js's `sender`, and as argument where the function takes a principal), so reads are
   * per user; half the loads are on a library contract.
   */
  private async dappLoadReal(user: Wallet, d: number): Promise<void> {
    const deployer = this.o.cast.deployer.address;
    const libraries = this.o.libraryContracts ?? 0;
    const sender = JSON.stringify({ sender: user.address, arguments: [] as string[] });
    const principalArg = `0x${Cl.serialize(Cl.principal(user.address)).replace(/^0x/, '')}`;
    if (libraries > 0 && this.random() < this.profile.dappLibraryShare) {
      const name = `lib-${Math.floor(this.random() * libraries)}`;
      await this.get('dapp', `/v2/contracts/interface/${deployer}/${name}`);
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/${name}/get-version`, sender);
      // A DeFi page also shows the user's balance of the popular token.
      await this.post(
        'dapp',
        `/v2/contracts/call-read/${deployer}/wallet-token/get-balance`,
        JSON.stringify({ sender: user.address, arguments: [principalArg] }),
      );
      return;
    }
    const name = (['counter', 'wallet-token', 'collectibles'] as const)[d % 3] as string;
    await this.get('dapp', `/v2/contracts/interface/${deployer}/${name}`);
    if (name === 'counter') {
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/counter/get-counter`, sender);
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/counter/get-score`, JSON.stringify({ sender: user.address, arguments: [principalArg] }));
      await this.post('dapp', `/v2/map_entry/${deployer}/counter/scores?proof=0`, JSON.stringify(principalArg));
      await this.get('dapp', `/v2/data_var/${deployer}/counter/counter?proof=0`);
    } else if (name === 'wallet-token') {
      await this.post(
        'dapp',
        `/v2/contracts/call-read/${deployer}/wallet-token/get-balance`,
        JSON.stringify({ sender: user.address, arguments: [principalArg] }),
      );
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/wallet-token/get-total-supply`, sender);
    } else {
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/collectibles/get-last-token-id`, sender);
      const id = `0x${Cl.serialize(Cl.uint(BigInt(1 + Math.floor(this.random() * 40)))).replace(/^0x/, '')}`;
      await this.post('dapp', `/v2/contracts/call-read/${deployer}/collectibles/get-owner`, JSON.stringify({ sender: user.address, arguments: [id] }));
      if (this.random() < 0.1) await this.get('dapp', `/v2/contracts/source/${deployer}/collectibles`);
    }
  }

  private async startSend(): Promise<void> {
    const idle = this.wallets.filter((w) => !this.sending.has(w.address));
    if (!idle.length) return;
    const w = this.pick(idle);
    this.sending.add(w.address);
    this.sends.started++;
    try {
      await this.sendFlow(w);
    } finally {
      this.sending.delete(w.address);
    }
  }

  /** stacks.js fetchNonce: the nonces route, falling back to /v2/accounts on any error. */
  private async fetchNonce(w: Wallet): Promise<number | undefined> {
    const nonces = await this.get('send', `/extended/v1/address/${w.address}/nonces`);
    if (nonces?.status === 200) return (JSON.parse(nonces.answer) as { possible_next_nonce: number }).possible_next_nonce;
    const account = await this.get('send', `/v2/accounts/${w.address}?proof=0`);
    return account?.status === 200 ? (JSON.parse(account.answer) as { nonce: number }).nonce : undefined;
  }

  private async sendFlow(w: Wallet): Promise<void> {
    const deployer = this.o.cast.deployer.address;
    const nonce = await this.fetchNonce(w);
    if (nonce === undefined) return;
    const index = this.wallets.indexOf(w);
    const kind = this.random();
    const recipient = this.pick(this.wallets).address;
    let sign: (fee: bigint) => Promise<string>;
    if (kind < 0.5) {
      await this.get('send', '/v2/fees/transfer');
      sign = (fee) => signTransfer(w, recipient, 1_000n, nonce, fee);
    } else if (kind < 0.75 || index % 2 !== 0) {
      await this.get('send', `/v2/contracts/interface/${deployer}/counter`);
      sign = (fee) => signContractCall(w, `${deployer}.counter`, 'set-score', [Cl.uint(BigInt(Math.floor(this.random() * 1000)))], nonce, fee);
    } else {
      await this.get('send', `/v2/contracts/interface/${deployer}/wallet-token`);
      sign = (fee) =>
        signContractCall(w, `${deployer}.wallet-token`, 'transfer', [Cl.uint(1n), Cl.principal(w.address), Cl.principal(recipient), Cl.none()], nonce, fee);
    }
    const draft = await sign(0n);
    const payload = serializePayload(deserializeTransaction(draft).payload);
    const estimate = await this.post('send', '/v2/fees/transaction', JSON.stringify({ transaction_payload: `0x${payload}`, estimated_len: draft.length / 2 }));
    let fee = 300n;
    if (estimate?.status === 200) fee = BigInt((JSON.parse(estimate.answer) as { estimations: Array<{ fee: number }> }).estimations[1]?.fee ?? 300);
    const raw = await sign(fee);
    this.sends.broadcasts++;
    const sent = await this.post('send', '/v2/transactions', JSON.stringify({ tx: raw }));
    if (sent?.status !== 200) {
      const reason = sent ? (JSON.parse(sent.answer || '{}') as { reason?: string }).reason : undefined;
      if (reason === 'BadNonce' || reason === 'ConflictingNonceInMempool') this.sends.badNonce++;
      else this.sends.otherRejections++;
      return;
    }
    this.sends.accepted++;
    const txId = `0x${JSON.parse(sent.answer) as string}`;
    // The wallet reads its nonce again at once (its next screen): it must count the broadcast.
    const after = await this.get('send', `/extended/v1/address/${w.address}/nonces`);
    if (after?.status === 200) {
      this.sends.nonceChecks++;
      if ((JSON.parse(after.answer) as { possible_next_nonce: number }).possible_next_nonce <= nonce) this.sends.staleNonces++;
    }
    await this.get('send', `/extended/v1/tx/mempool?address=${w.address}&limit=50`);
    this.pollPending(txId, 0);
  }

  /** Pending-tx polling (staleTime 30 s in Leather), until mined or 10 polls. */
  private pollPending(txId: string, polls: number): void {
    if (polls >= 10) return;
    this.at((30 * SECOND) / this.o.timeScale, async () => {
      const tx = await this.get('wallet', `/extended/v1/tx/${txId}`);
      const pending = tx?.status !== 200 || (JSON.parse(tx.answer) as { tx_status?: string }).tx_status === 'pending';
      if (pending) this.pollPending(txId, polls + 1);
    });
  }

  // ---- transport ----

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)] as T;
  }

  private get(actor: Actor, url: string): Promise<Exchange | undefined> {
    return this.exchange(actor, 'GET', url);
  }

  private post(actor: Actor, url: string, body: string): Promise<Exchange | undefined> {
    return this.exchange(actor, 'POST', url, body);
  }

  private async exchange(actor: Actor, method: 'GET' | 'POST', url: string, body?: string): Promise<Exchange | undefined> {
    const tSend = this.now();
    const record: Exchange = { actor, method, url, family: familyOf(method, url).id, tSend, tRecv: tSend, status: 0, answer: '' };
    if (body !== undefined) record.body = body;
    try {
      const response = await fetch(this.o.baseUrl + url, {
        method,
        ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}),
        signal: AbortSignal.timeout(20_000),
      });
      record.answer = await response.text();
      record.status = response.status;
      const xCache = response.headers.get('x-cache');
      if (xCache) record.xCache = xCache;
    } catch {
      // status 0: no answer
    } finally {
      record.tRecv = this.now();
      this.exchanges.push(record);
    }
    return record.status ? record : undefined;
  }
}
