/**
 * About 10,000 distinct URLs over the proxy's 13 routes, as wallets and explorers would ask:
 * every recorded request the route table matches, and synthetic variants of them (pages of
 * address transactions and contract events, balances at past blocks, blocks and burn blocks by
 * height, transactions by id and in pairs, unknown transaction ids).
 */
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { RECORDED, loadRecordings, splitUrl } from '../../testkit/index.js';

export function urlMix(count: number, random: () => number): string[] {
  const match = createRouteMatcher(ROUTES);
  const recorded = loadRecordings()
    .map((r) => r.path)
    .filter((url) => match(splitUrl(url).path).kind === 'match');
  const urls = new Set(recorded);
  const txIds = [...new Set(recorded.flatMap((url) => /^\/extended\/v1\/tx\/(0x[0-9a-f]{64})$/.exec(url)?.[1] ?? []))];
  const principals = [...new Set(recorded.flatMap((url) => /\/address\/(S[0-9A-Z]{38,40})\//.exec(url)?.[1] ?? []))];
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const hex = () => Array.from({ length: 64 }, () => Math.floor(random() * 16).toString(16)).join('');
  const P = RECORDED.principal;
  const generators: Array<() => string> = [
    () => `/extended/v1/address/${pick(principals)}/transactions?limit=${1 + Math.floor(random() * 50)}&offset=${Math.floor(random() * 50)}`,
    () => `/extended/v2/addresses/${pick(principals)}/transactions?limit=${1 + Math.floor(random() * 30)}&offset=${Math.floor(random() * 30)}`,
    () => `/extended/v1/address/${pick(principals)}/stx?until_block=${1 + Math.floor(random() * 50)}`,
    () => `/extended/v1/address/${pick(principals)}/balances?until_block=${1 + Math.floor(random() * 50)}`,
    () => `/extended/v1/contract/${RECORDED.contractId}/events?limit=${1 + Math.floor(random() * 20)}&offset=${Math.floor(random() * 20)}`,
    () => `/extended/v1/tx/events?address=${P}&limit=${1 + Math.floor(random() * 50)}&offset=${Math.floor(random() * 20)}`,
    () => `/extended/v1/tx/events?tx_id=${pick(txIds)}&limit=${1 + Math.floor(random() * 50)}`,
    () => `/extended/v2/blocks/${1 + Math.floor(random() * 60)}`,
    () => `/extended/v1/block/by_burn_block_height/${1 + Math.floor(random() * 150)}`,
    () => `/extended/v1/tx/${pick(txIds)}`,
    () => `/extended/v1/tx/multiple?tx_id=${pick(txIds)},${pick(txIds)}`,
    () => `/extended/v1/tx/0x${hex()}`,
  ];
  for (let i = 0; urls.size < count && i < count * 20; i++) urls.add((generators[i % generators.length] as () => string)());
  return [...urls];
}
