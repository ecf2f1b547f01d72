/**
 * Who a transaction names, by role (issue 28), read from the upstream's JSON of it (a pending or
 * a mined transaction: both carry `sender_address`, `sponsored`, `sponsor_address`, `tx_type`
 * and the payload's own object):
 *   - `senders`: its sender and its sponsor, the principals whose nonces it moves (the upstream's
 *     nonces count the txs whose sender, or sponsor when sponsored, a principal is);
 *   - `listed`: the principals the upstream's mempool list (`getMempoolTxList({ address })`) files
 *     it under: its sender, its sponsor (not filed by the upstream, named anyway: a superset is
 *     safe), a token transfer's recipient, the contract a call names or a deploy creates.
 * Both are subsets of `principals`, every principal the transaction names (touched-principals.ts).
 * A transaction this does not understand (no sender as text, a sponsored flag that is not a
 * boolean, a type it does not know, a payload without its principal) names every principal in
 * both roles: what cannot be told apart counts as everything. Pure.
 */
export interface TxRoles {
  senders: string[];
  listed: string[];
}

/** Types whose payload files the transaction under no principal beyond its senders. */
const NO_PAYLOAD_PRINCIPAL = new Set(['coinbase', 'tenure_change', 'poison_microblock']);

/** Where each type's payload names the principal its mempool list files it under. */
const PAYLOAD_PRINCIPAL: Record<string, readonly [string, string]> = {
  token_transfer: ['token_transfer', 'recipient_address'],
  contract_call: ['contract_call', 'contract_id'],
  smart_contract: ['smart_contract', 'contract_id'],
};

export function txRoles(tx: unknown, principals: Iterable<string>): TxRoles {
  const everything = (): TxRoles => {
    const all = [...principals];
    return { senders: all, listed: all };
  };
  const record = tx !== null && typeof tx === 'object' && !Array.isArray(tx) ? (tx as Record<string, unknown>) : undefined;
  const sender = record?.sender_address;
  if (!record || typeof sender !== 'string' || typeof record.sponsored !== 'boolean') return everything();
  const senders = [sender];
  const sponsor = record.sponsor_address;
  if (typeof sponsor === 'string') senders.push(sponsor);
  else if (record.sponsored) return everything();
  const type = record.tx_type;
  if (typeof type !== 'string') return everything();
  if (NO_PAYLOAD_PRINCIPAL.has(type)) return { senders, listed: senders };
  const where = Object.hasOwn(PAYLOAD_PRINCIPAL, type) ? PAYLOAD_PRINCIPAL[type] : undefined;
  if (!where) return everything();
  const payload = record[where[0]] as Record<string, unknown> | null | undefined;
  const named = payload !== null && typeof payload === 'object' ? payload[where[1]] : undefined;
  if (typeof named !== 'string') return everything();
  return { senders, listed: [...senders, named] };
}
