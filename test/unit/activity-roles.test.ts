/**
 * Roles in principal activity (issue 28): a nonce moves only with what its principal sends or
 * sponsors, a v1 mempool list only with what the upstream files under it. The pure parts: who a
 * transaction's JSON names in which role (chain/tx-roles.ts), who a broadcast names
 * (decodeBroadcast), and the registry reading the role's marks for an entry that moves with it.
 */
import { describe, expect, it } from 'vitest';
import { Cl, getAddressFromPrivateKey, makeSTXTokenTransfer, makeUnsignedContractCall, privateKeyToPublic } from '@stacks/transactions';
import { PrincipalActivity, type TipRef } from '../../src/chain/activity.js';
import { decodeBroadcast } from '../../src/chain/broadcast-principals.js';
import { txRoles } from '../../src/chain/tx-roles.js';
import { collectPrincipals } from '../../src/chain/touched-principals.js';

const ALICE = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const BOB = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const CAROL = 'SP1P72Z3704VMT3DMHPP2CB8TGQWGDBHD3RPR9GZS';
const TOKEN = `${CAROL}.wallet-token`;
const SETTINGS = { maxPrincipals: 100, settleMs: 1_000, coinbaseWindowBlocks: 5, watchMs: 1_000_000 };
const block = (height: number): TipRef => ({ height, indexBlockHash: `0xindex${height}`, burnHeight: 500 });

const rolesOf = (tx: unknown): { senders: string[]; listed: string[]; all: string[] } => {
  const principals = new Set<string>();
  collectPrincipals(tx, principals);
  const roles = txRoles(tx, principals);
  return { senders: [...roles.senders].sort(), listed: [...roles.listed].sort(), all: [...principals].sort() };
};

describe('txRoles: who a transaction names, by role', () => {
  it('an STX transfer: sent by its sender, listed under sender and recipient', () => {
    const tx = { tx_type: 'token_transfer', sender_address: ALICE, sponsored: false, token_transfer: { recipient_address: BOB, amount: '1' } };
    expect(rolesOf(tx)).toEqual({ senders: [ALICE], listed: [ALICE, BOB].sort(), all: [ALICE, BOB].sort() });
  });

  it('a contract call: listed under the contract called, not under the principals its arguments name', () => {
    const tx = {
      tx_type: 'contract_call',
      sender_address: ALICE,
      sponsored: false,
      contract_call: { contract_id: TOKEN, function_name: 'transfer', function_args: [{ repr: `'${BOB}` }] },
    };
    const roles = rolesOf(tx);
    expect(roles.senders).toEqual([ALICE]);
    expect(roles.listed).toEqual([ALICE, TOKEN].sort());
    expect(roles.all).toContain(BOB);
  });

  it('a sponsored transaction: its sponsor sends it too', () => {
    const tx = { tx_type: 'coinbase', sender_address: ALICE, sponsored: true, sponsor_address: CAROL, coinbase_payload: { alt_recipient: BOB } };
    const roles = rolesOf(tx);
    expect(roles.senders).toEqual([ALICE, CAROL].sort());
    expect(roles.listed).toEqual([ALICE, CAROL].sort());
  });

  it('anything not understood names every principal in both roles', () => {
    const cases = [
      { tx_type: 'token_transfer', sponsored: false, token_transfer: { recipient_address: BOB } }, // no sender
      { tx_type: 'token_transfer', sender_address: ALICE, token_transfer: { recipient_address: BOB } }, // no sponsored flag
      { tx_type: 'token_transfer', sender_address: ALICE, sponsored: true, token_transfer: { recipient_address: BOB } }, // sponsor missing
      { tx_type: 'a_new_type', sender_address: ALICE, sponsored: false, extra: BOB }, // a type not known
      { tx_type: 'contract_call', sender_address: ALICE, sponsored: false, contract_call: { function_args: [BOB] } }, // no contract id
      { sender_address: ALICE, sponsored: false, recipient: BOB }, // no type
    ];
    for (const tx of cases) {
      const roles = rolesOf(tx);
      expect(roles.senders, JSON.stringify(tx)).toEqual(roles.all);
      expect(roles.listed, JSON.stringify(tx)).toEqual(roles.all);
    }
    expect(txRoles(null, [ALICE])).toEqual({ senders: [ALICE], listed: [ALICE] });
    // A prototype key is no type it knows.
    expect(rolesOf({ tx_type: 'constructor', sender_address: ALICE, sponsored: false, x: BOB }).senders).toEqual([ALICE, BOB].sort());
  });
});

describe('decodeBroadcast: who a broadcast names, by role', () => {
  const key = 'edf9aee84d9b7abc145504dde6726c64f369d37ee34ded868fabd876c26570bc01';
  const sender = getAddressFromPrivateKey(key, 'mainnet');

  it('an STX transfer: the origin sends, the recipient is listed, neither is a sender for the other', async () => {
    const tx = await makeSTXTokenTransfer({ recipient: BOB, amount: 1n, senderKey: key, network: 'mainnet', fee: 200n, nonce: 0n });
    const names = decodeBroadcast(Buffer.from(JSON.stringify({ tx: tx.serialize() })), 'application/json');
    expect(names?.roles.senders).toEqual([sender]);
    expect(names?.roles.listed).toEqual([sender, BOB]);
    expect(names?.principals).toEqual([sender, BOB]);
  });

  it('a contract call: the contract is listed; a principal in its arguments is named but neither sends nor is listed', async () => {
    const tx = await makeUnsignedContractCall({
      contractAddress: CAROL,
      contractName: 'wallet-token',
      functionName: 'transfer',
      functionArgs: [Cl.principal(BOB)],
      publicKey: privateKeyToPublic(key),
      network: 'mainnet',
      fee: 200n,
      nonce: 0n,
    });
    const names = decodeBroadcast(Buffer.from(tx.serialize(), 'hex'), 'application/octet-stream');
    expect(names?.roles.senders).toEqual([sender]);
    expect(names?.roles.listed).toEqual([sender, TOKEN]);
    expect(names?.principals).not.toContain(BOB); // arguments are not decoded: the watcher and the learner see them
  });
});

describe('PrincipalActivity: roles', () => {
  const roles = { senders: [ALICE], listed: [ALICE, BOB] };

  it("a broadcast: the recipient's nonces did not change, its pending list and balance did; the sender's all did", () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.recordBroadcast([ALICE, BOB, CAROL], 10_000, roles);
    expect(activity.principalChangedAfter(ALICE, 9_999, 'sent_transactions')).toBe(true);
    expect(activity.principalChangedAfter(BOB, 9_999, 'sent_transactions')).toBe(false);
    expect(activity.principalChangedAfter(BOB, 9_999, 'listed_transactions')).toBe(true);
    expect(activity.principalChangedAfter(CAROL, 9_999, 'listed_transactions')).toBe(false);
    expect(activity.principalChangedAfter(CAROL, 9_999)).toBe(true);
    expect(activity.principalChangedAfter(CAROL, 9_999, 'transactions')).toBe(true);
  });

  it('a broadcast whose roles are not told (another instance announced it) changes every role', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.recordBroadcast([ALICE, BOB], 10_000);
    expect(activity.principalChangedAfter(BOB, 9_999, 'sent_transactions')).toBe(true);
    expect(activity.principalChangedAfter(BOB, 9_999, 'listed_transactions')).toBe(true);
  });

  it('the mempool watcher: a change vouches against the role it was seen in only', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_100 });
    activity.mempoolPolled({ kind: 'changed', principals: [ALICE, BOB, CAROL], senders: [ALICE], listed: [ALICE, BOB], startedAt: 2_000, endedAt: 2_100 });
    expect(activity.mempoolUnchangedSince(BOB, 1_500, 'sent_transactions')).toBe(2_000);
    expect(activity.mempoolUnchangedSince(BOB, 1_500, 'listed_transactions')).toBeUndefined();
    expect(activity.mempoolUnchangedSince(CAROL, 1_500, 'listed_transactions')).toBe(2_000);
    expect(activity.mempoolUnchangedSince(CAROL, 1_500)).toBeUndefined();
    expect(activity.mempoolUnchangedSince(ALICE, 1_500, 'sent_transactions')).toBeUndefined();
    expect(activity.principalChangedAfter(BOB, 1_500, 'sent_transactions')).toBe(false);
    expect(activity.principalChangedAfter(BOB, 1_500, 'listed_transactions')).toBe(true);
    // Not told apart: every role.
    activity.mempoolPolled({ kind: 'changed', principals: [CAROL], startedAt: 3_000, endedAt: 3_100 });
    expect(activity.mempoolUnchangedSince(CAROL, 2_500, 'sent_transactions')).toBeUndefined();
  });

  it('blocks: a block that only paid the principal leaves its nonces (and, from a contract call, its pending list) learned unchanged', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.tipChanged(block(10), false, 1_000);
    const outcome = activity.tipChanged(block(11), false, 1_011);
    if (outcome.kind !== 'learn') throw new Error('not to learn');
    activity.blockLearned(
      block(11),
      outcome.epoch,
      { kind: 'known', principals: [ALICE, BOB, CAROL], coinbaseRecipients: [], senderPrincipals: [ALICE], listedPrincipals: [ALICE, BOB] },
      1_011,
    );
    expect(activity.unchangedSince(BOB, 10, 2_000, 'sent_transactions')).toBe(true);
    expect(activity.unchangedSince(BOB, 10, 2_000, 'listed_transactions')).toBe(false);
    expect(activity.unchangedSince(CAROL, 10, 2_000, 'listed_transactions')).toBe(true);
    expect(activity.unchangedSince(CAROL, 10, 2_000, 'transactions')).toBe(false);
    expect(activity.unchangedSince(ALICE, 10, 2_000, 'sent_transactions')).toBe(false);
    // Roles not told apart (a follower's relayed word from an older leader): every role.
    const next = activity.tipChanged(block(12), false, 1_012);
    if (next.kind !== 'learn') throw new Error('not to learn');
    activity.blockLearned(block(12), next.epoch, { kind: 'known', principals: [CAROL], coinbaseRecipients: [] }, 1_012);
    expect(activity.unchangedSince(CAROL, 11, 2_000, 'sent_transactions')).toBe(false);
  });

  it('an evicted principal leaves its broad marks to every role of every principal not remembered', () => {
    const activity = new PrincipalActivity({ ...SETTINGS, maxPrincipals: 1 });
    activity.recordBroadcast([BOB], 10_000, { senders: [], listed: [] });
    activity.recordBroadcast([ALICE], 20_000, { senders: [ALICE], listed: [ALICE] }); // evicts BOB
    // BOB is not remembered: what he inherits is the broad mark of his eviction, in every role.
    expect(activity.principalChangedAfter(BOB, 9_999, 'sent_transactions')).toBe(true);
    expect(activity.principalChangedAfter(CAROL, 9_999, 'listed_transactions')).toBe(true);
    expect(activity.principalChangedAfter(CAROL, 11_001, 'sent_transactions')).toBe(false);
  });
});
