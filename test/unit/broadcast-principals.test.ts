/**
 * Decoding a broadcast (src/chain/broadcast-principals.ts): real signed transactions built with
 * @stacks/transactions, sent as stacks.js sends them (JSON {tx}) and as raw octet-stream bytes.
 */
import {
  Cl,
  makeContractCall,
  makeContractDeploy,
  makeSTXTokenTransfer,
  makeUnsignedSTXTokenTransfer,
  Pc,
  privateKeyToAddress,
  randomPrivateKey,
  sponsorTransaction,
  type StacksTransactionWire,
} from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { broadcastPrincipals, MAX_BROADCAST_BODY_BYTES } from '../../src/chain/broadcast-principals.js';

const senderKey = randomPrivateKey();
const sponsorKey = randomPrivateKey();
const SENDER = privateKeyToAddress(senderKey, 'testnet');
const SPONSOR = privateKeyToAddress(sponsorKey, 'testnet');
const RECIPIENT = privateKeyToAddress(randomPrivateKey(), 'testnet');
const TOKEN = 'ST1PQHQKV0RJXZFY1DGX8MNSNYVE3VGZJSRTPGZGM.token';

const asJson = (tx: StacksTransactionWire): Buffer => Buffer.from(JSON.stringify({ tx: tx.serialize() }));
const asBytes = (tx: StacksTransactionWire): Buffer => Buffer.from(tx.serializeBytes());

describe('broadcastPrincipals', () => {
  it('names the sender and recipient of a token transfer, sent as JSON or as raw bytes', async () => {
    const tx = await makeSTXTokenTransfer({ recipient: RECIPIENT, amount: 10n, senderKey, network: 'testnet', fee: 200n, nonce: 3n });
    expect(broadcastPrincipals(asJson(tx), 'application/json')).toEqual([SENDER, RECIPIENT]);
    expect(broadcastPrincipals(asBytes(tx), 'application/octet-stream')).toEqual([SENDER, RECIPIENT]);
    // A mainnet transaction names mainnet addresses.
    const mainnet = await makeSTXTokenTransfer({
      recipient: 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7',
      amount: 1n,
      senderKey,
      network: 'mainnet',
      fee: 200n,
      nonce: 0n,
    });
    expect(broadcastPrincipals(asJson(mainnet), undefined)).toEqual([privateKeyToAddress(senderKey, 'mainnet'), 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7']);
  });

  it('names the sponsor of a sponsored transaction', async () => {
    const unsigned = await makeSTXTokenTransfer({ recipient: RECIPIENT, amount: 10n, senderKey, network: 'testnet', fee: 0n, nonce: 1n, sponsored: true });
    const sponsored = await sponsorTransaction({ transaction: unsigned, sponsorPrivateKey: sponsorKey, fee: 300n, sponsorNonce: 7n, network: 'testnet' });
    expect(broadcastPrincipals(asJson(sponsored), 'application/json')).toEqual([SENDER, SPONSOR, RECIPIENT]);
  });

  it('names the contract a call names and the principals of its post-conditions', async () => {
    const [address, name] = TOKEN.split('.') as [string, string];
    const tx = await makeContractCall({
      contractAddress: address,
      contractName: name,
      functionName: 'transfer',
      functionArgs: [Cl.uint(5), Cl.principal(SENDER), Cl.principal(RECIPIENT), Cl.none()],
      postConditions: [Pc.principal(SENDER).willSendEq(5).ft(TOKEN, 'tok'), Pc.principal(TOKEN).willSendLte(1).ustx()],
      senderKey,
      network: 'testnet',
      fee: 300n,
      nonce: 4n,
    });
    expect(broadcastPrincipals(asJson(tx), 'application/json')).toEqual([SENDER, TOKEN]);
  });

  it('names the contract a deploy creates', async () => {
    const tx = await makeContractDeploy({ contractName: 'hello', codeBody: '(define-read-only (hi) u1)', senderKey, network: 'testnet', fee: 500n, nonce: 0n });
    expect(broadcastPrincipals(asJson(tx), 'application/json')).toEqual([SENDER, `${SENDER}.hello`]);
  });

  it('gives nothing for what does not decode or is larger than the node takes', async () => {
    const unsigned = await makeUnsignedSTXTokenTransfer({
      recipient: RECIPIENT,
      amount: 1n,
      publicKey: '02' + '11'.repeat(32),
      network: 'testnet',
      fee: 1n,
      nonce: 0n,
    });
    const hex = unsigned.serialize();
    expect(broadcastPrincipals(Buffer.from(JSON.stringify({ tx: hex.slice(0, 40) })), 'application/json')).toBeUndefined();
    expect(broadcastPrincipals(Buffer.from('{"tx": 12}'), 'application/json')).toBeUndefined();
    expect(broadcastPrincipals(Buffer.from('not json'), 'application/json')).toBeUndefined();
    expect(broadcastPrincipals(Buffer.from([1, 2, 3]), 'application/octet-stream')).toBeUndefined();
    expect(broadcastPrincipals(Buffer.alloc(0), 'application/octet-stream')).toBeUndefined();
    expect(broadcastPrincipals(Buffer.alloc(MAX_BROADCAST_BODY_BYTES + 1, 0x20), 'application/json')).toBeUndefined();
  });
});
