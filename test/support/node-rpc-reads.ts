/**
 * The distinct node RPC reads a dApp page and a send flow make against the surface upstream
 * (several per URL where the body differs), for tests of "one upstream request per distinct read
 * per block".
 */
import { Cl } from '@stacks/transactions';
import type { SurfaceUpstream } from '../../testkit/surface-upstream/index.js';

export interface NodeRpcRead {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

const principalArg = (who: string) => `0x${Cl.serialize(Cl.principal(who)).replace(/^0x/, '')}`;

export function nodeRpcReads(upstream: SurfaceUpstream): NodeRpcRead[] {
  const deployer = upstream.cast.deployer.address;
  const [alice, bob] = upstream.cast.wallets.map((w) => w.address) as [string, string];
  const sender = (who: string) => JSON.stringify({ sender: who, arguments: [] });
  return [
    { method: 'POST', path: `/v2/contracts/call-read/${deployer}/counter/get-counter`, body: sender(alice) },
    { method: 'POST', path: `/v2/contracts/call-read/${deployer}/counter/get-counter`, body: sender(bob) },
    {
      method: 'POST',
      path: `/v2/contracts/call-read/${deployer}/wallet-token/get-balance`,
      body: JSON.stringify({ sender: alice, arguments: [principalArg(alice)] }),
    },
    { method: 'POST', path: `/v2/map_entry/${deployer}/counter/scores?proof=0`, body: JSON.stringify(principalArg(alice)) },
    { method: 'POST', path: `/v2/map_entry/${deployer}/counter/scores?proof=0`, body: JSON.stringify(principalArg(bob)) },
    { method: 'GET', path: `/v2/data_var/${deployer}/counter/counter?proof=0` },
    { method: 'POST', path: '/v2/fees/transaction', body: JSON.stringify({ transaction_payload: '0x0000', estimated_len: 180 }) },
    { method: 'GET', path: '/v2/fees/transfer' },
  ];
}

/** How many distinct reads each path has. */
export function distinctPerPath(reads: NodeRpcRead[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const read of reads) counts.set(read.path, (counts.get(read.path) ?? 0) + 1);
  return counts;
}

/** Upstream requests per path (the proxy's own requests, tip polls and block reads, left out). */
export function askedPerPath(upstream: SurfaceUpstream, paths: Iterable<string>): Map<string, number> {
  return new Map([...paths].map((path) => [path, upstream.requests.filter((r) => r.url === path).length]));
}
