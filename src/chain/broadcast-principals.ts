/**
 * The principals a broadcast transaction names (issue 15, "broadcast-aware"): decoded from the
 * body a client sent to POST /v2/transactions with the official codec (@stacks/transactions'
 * deserializeTransaction), never by a parser of our own.
 *
 * The node takes the transaction two ways (stacks-core's RPC; stacks.js `broadcastTransaction`
 * sends the first): JSON `{"tx":"<hex>", "attachment":…}`, or the raw bytes as
 * application/octet-stream. Named: the origin (its nonce and balance move), the sponsor (its
 * nonce and balance move), the token-transfer recipient, the contract a contract call names,
 * the contract a deploy creates, and the principals of the post-conditions. What the upstream's
 * mempool indexes by principal is a subset of these (sender, sponsor, recipient, contract).
 *
 * Pure: bytes in, principals out; anything that does not decode is `undefined` (the caller then
 * treats the whole mempool as changed).
 */
import {
  addressFromVersionHash,
  addressHashModeToVersion,
  addressToString,
  AuthType,
  ClarityType,
  deriveNetworkFromTx,
  deserializeTransaction,
  PayloadType,
  PostConditionPrincipalId,
  type SpendingCondition,
  type StacksTransactionWire,
} from '@stacks/transactions';
import type { BroadcastRoles } from './activity.js';

/** The node's own limit on a transaction (stacks-core MAX_TRANSACTION_LEN = MAX_BLOCK_LEN, 2 MiB). */
export const MAX_TRANSACTION_BYTES = 2 * 1024 * 1024;
/** A JSON body carries the transaction as hex (twice the bytes), and may carry an attachment. */
export const MAX_BROADCAST_BODY_BYTES = 2 * MAX_TRANSACTION_BYTES + 64 * 1024;

const HEX = /^(?:0x)?((?:[0-9a-fA-F]{2})+)$/;

/** The transaction bytes of a broadcast body, by its content type (JSON `{tx}` or raw bytes). */
function transactionBytes(body: Buffer, contentType: string | undefined): Uint8Array | undefined {
  const looksJson = (contentType ?? '').includes('json') || body.subarray(0, 16).toString('latin1').trimStart().startsWith('{');
  if (!looksJson) return body.length > 0 ? new Uint8Array(body.buffer, body.byteOffset, body.length) : undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const tx = (parsed as { tx?: unknown } | null)?.tx;
  const hex = typeof tx === 'string' ? HEX.exec(tx)?.[1] : undefined;
  return hex === undefined ? undefined : Uint8Array.from(Buffer.from(hex, 'hex'));
}

function conditionAddress(condition: SpendingCondition, tx: StacksTransactionWire): string {
  const version = addressHashModeToVersion(condition.hashMode, deriveNetworkFromTx(tx));
  return addressToString(addressFromVersionHash(version, condition.signer));
}

/** The principals of a payload; every one of them is one the mempool list files the transaction under. */
function payloadPrincipals(tx: StacksTransactionWire, origin: string): string[] {
  const payload = tx.payload;
  switch (payload.payloadType) {
    case PayloadType.TokenTransfer: {
      const recipient = payload.recipient;
      return recipient.type === ClarityType.PrincipalStandard || recipient.type === ClarityType.PrincipalContract ? [recipient.value] : [];
    }
    case PayloadType.ContractCall:
      return [`${addressToString(payload.contractAddress)}.${payload.contractName.content}`];
    case PayloadType.SmartContract:
    case PayloadType.VersionedSmartContract:
      return [`${origin}.${payload.contractName.content}`];
    default:
      return [];
  }
}

function postConditionPrincipals(tx: StacksTransactionWire): string[] {
  const principals: string[] = [];
  for (const condition of tx.postConditions.values) {
    const principal = (
      condition as { principal?: { prefix: PostConditionPrincipalId; address?: Parameters<typeof addressToString>[0]; contractName?: { content: string } } }
    ).principal;
    if (!principal?.address) continue;
    const address = addressToString(principal.address);
    principals.push(
      principal.prefix === PostConditionPrincipalId.Contract && principal.contractName ? `${address}.${principal.contractName.content}` : address,
    );
  }
  return principals;
}

/** What a broadcast names: every principal (origin first), and in the narrower roles (activity.ts). */
export interface BroadcastNames {
  principals: string[];
  roles: BroadcastRoles;
  /** The transaction's id (hex, no 0x): what the mempool watcher looks for (broadcast-settling.ts). */
  txId: string;
}

/**
 * The principals a broadcast body names, with its senders (origin and sponsor) and what the
 * mempool list files it under (those and the payload's principal), or undefined when it is not a
 * transaction the codec can read (or larger than the node would take).
 */
export function decodeBroadcast(body: Buffer, contentType: string | undefined): BroadcastNames | undefined {
  if (body.length > MAX_BROADCAST_BODY_BYTES) return undefined;
  const bytes = transactionBytes(body, contentType);
  if (!bytes || bytes.length > MAX_TRANSACTION_BYTES) return undefined;
  try {
    const tx = deserializeTransaction(bytes);
    const origin = conditionAddress(tx.auth.spendingCondition, tx);
    const senders = [origin];
    if (tx.auth.authType === AuthType.Sponsored) senders.push(conditionAddress(tx.auth.sponsorSpendingCondition, tx));
    const listed = [...senders, ...payloadPrincipals(tx, origin)];
    const principals = new Set([...listed, ...postConditionPrincipals(tx)]);
    return { principals: [...principals], roles: { senders, listed }, txId: tx.txid() };
  } catch {
    return undefined;
  }
}

/** The principals a broadcast body names (origin first), or undefined when it does not decode (decodeBroadcast). */
export function broadcastPrincipals(body: Buffer, contentType: string | undefined): string[] | undefined {
  return decodeBroadcast(body, contentType)?.principals;
}
