/**
 * The principals a block's transactions and events name (issue 15, block learning), read from
 * the upstream's JSON as a safe superset: every principal-shaped token of every string (sender,
 * sponsor, recipients, contract ids, asset ids `<contract>::<token>`, Clarity reprs of function
 * arguments and print events), every `{address, contract_name}` pair (post-conditions), and for
 * a contract principal its address too. A principal a transaction touched can only be missed if
 * the upstream's JSON does not name it at all. Pure.
 */

/**
 * A principal-shaped token: an address (S, a version character, c32 text) and an optional
 * contract name, not preceded or followed by characters a principal could continue with.
 */
const PRINCIPAL_TOKEN = /(?<![0-9A-Za-z])(S[0-9A-Z]{27,40})(\.[a-zA-Z][a-zA-Z0-9_-]{0,127})?(?![0-9A-Za-z])/g;
/** JSON nesting walked at most (the upstream's transactions and events are a few levels deep). */
const MAX_DEPTH = 32;

function scanString(text: string, into: Set<string>): void {
  // Most strings (hashes, numbers as text, names) hold no 'S' followed by c32 text: skip them cheaply.
  if (text.length < 28 || !text.includes('S')) return;
  for (const match of text.matchAll(PRINCIPAL_TOKEN)) {
    const address = match[1] as string;
    into.add(address);
    if (match[2] !== undefined) into.add(address + match[2]);
  }
}

/**
 * Adds to `into` every principal `value` (parsed JSON) names. False when part of it lies deeper
 * than the walk goes (MAX_DEPTH): what that part names is not known, so `into` may miss some.
 */
export function collectPrincipals(value: unknown, into: Set<string>, depth = 0): boolean {
  if (typeof value === 'string') {
    scanString(value, into);
    return true;
  }
  if (value === null || typeof value !== 'object') return true;
  if (depth > MAX_DEPTH) return false;
  let complete = true;
  if (Array.isArray(value)) {
    for (const item of value) complete = collectPrincipals(item, into, depth + 1) && complete;
    return complete;
  }
  const record = value as Record<string, unknown>;
  // A post-condition principal names a contract in two fields.
  if (typeof record.address === 'string' && typeof record.contract_name === 'string') scanString(`${record.address}.${record.contract_name}`, into);
  for (const child of Object.values(record)) complete = collectPrincipals(child, into, depth + 1) && complete;
  return complete;
}

/** The principals a coinbase credits later (matured miner rewards): its sender and its alternative recipient. */
export function coinbaseRecipients(tx: unknown): string[] {
  const record = tx as { tx_type?: unknown; sender_address?: unknown; coinbase_payload?: { alt_recipient?: unknown } } | null;
  if (record?.tx_type !== 'coinbase') return [];
  const recipients = new Set<string>();
  if (typeof record.sender_address === 'string') recipients.add(record.sender_address);
  const alt = record.coinbase_payload?.alt_recipient;
  if (typeof alt === 'string') recipients.add(alt);
  return [...recipients];
}
