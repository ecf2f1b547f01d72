/**
 * The fake upstream's JSON-RPC channel answers as the upstream's ws-rpc-channel.ts does (its
 * replies are jsonrpc-lite's bytes): the tests of the link and the fan-out lean on it.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';

const TX = `0x${'ab'.repeat(32)}`;

describe('fake upstream JSON-RPC channel', () => {
  const { defer } = useCleanups();

  const connect = async (path = '/extended/v1/ws'): Promise<{ upstream: FakeUpstream; ws: WebSocket; next: () => Promise<string> }> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    const ws = new WebSocket(`${upstream.url.replace('http', 'ws')}${path}`);
    const frames: string[] = [];
    const waiting: ((frame: string) => void)[] = [];
    ws.on('message', (data) => {
      const frame = data.toString();
      const waiter = waiting.shift();
      if (waiter) waiter(frame);
      else frames.push(frame);
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    defer(async () => ws.terminate());
    const next = () => {
      const frame = frames.shift();
      return frame !== undefined ? Promise.resolve(frame) : new Promise<string>((resolve) => waiting.push(resolve));
    };
    return { upstream, ws, next };
  };

  it('replies to subscriptions with the upstream’s bytes, and validates them as it does', async () => {
    const { ws, next } = await connect();
    const exchanges: [unknown, string][] = [
      [{ event: 'block' }, '{"jsonrpc":"2.0","id":1,"result":{}}'],
      [{ event: 'tx_update', tx_id: TX.slice(2).toUpperCase() }, `{"jsonrpc":"2.0","id":1,"result":{"tx_id":"${TX}"}}`],
      [{ event: 'address_tx_update', address: RECORDED.principal }, `{"jsonrpc":"2.0","id":1,"result":{"address":"${RECORDED.principal}"}}`],
      [{ event: 'tx_update', tx_id: '0x12' }, '{"jsonrpc":"2.0","id":1,"error":{"message":"Invalid params","code":-32602,"data":"invalid tx_id"}}'],
      [
        { event: 'address_balance_update', address: 'nope' },
        '{"jsonrpc":"2.0","id":1,"error":{"message":"Invalid params","code":-32602,"data":"invalid address"}}',
      ],
      [
        { event: 'nonsense' },
        '{"jsonrpc":"2.0","id":1,"error":{"message":"Invalid params","code":-32602,"data":"subscription request must use a valid event name"}}',
      ],
      [{}, '{"jsonrpc":"2.0","id":1,"error":{"message":"Invalid params","code":-32602,"data":"subscription requests must include an event name"}}'],
    ];
    for (const [params, reply] of exchanges) {
      ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'subscribe', params, id: 1 }));
      expect(await next()).toBe(reply);
    }
    ws.send('{"jsonrpc":"2.0","method":"ping","id":2}');
    expect(await next()).toBe('{"jsonrpc":"2.0","id":2,"error":{"message":"Method not found","code":-32601}}');
  });

  it('answers batches as arrays, ignores client notifications, and refuses what it cannot read', async () => {
    const { ws, next } = await connect();
    ws.send('{"jsonrpc":"2.0","method":"subscribe","params":{"event":"block"}}');
    ws.send(
      JSON.stringify([
        { jsonrpc: '2.0', method: 'subscribe', params: { event: 'mempool' }, id: 'a' },
        { jsonrpc: '2.0', method: 'unsubscribe', params: { event: 'mempool' }, id: 'b' },
      ]),
    );
    expect(await next()).toBe('[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{}}]');
    ws.send('not json');
    expect(JSON.parse(await next())).toMatchObject({ id: null, error: { code: -32700 } });
    ws.send(Buffer.from('{}'), { binary: true });
    expect(JSON.parse(await next())).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { message: 'Parse error', code: -32700, data: 'unexpected data type: Buffer' },
    });
  });

  it('pushes the chain’s new blocks and pending transactions to their subscribers only', async () => {
    const { upstream, ws, next } = await connect('/extended/v1/ws?any=thing');
    ws.send('{"jsonrpc":"2.0","method":"subscribe","params":{"event":"block"},"id":1}');
    await next();
    upstream.addPendingTx(); // nobody subscribed to mempool: nothing sent
    upstream.advanceTip();
    const block = JSON.parse(await next()) as { method: string; params: { height: number; index_block_hash: string; txs: string[] } };
    expect(block.method).toBe('block');
    expect(block.params).toMatchObject({ height: RECORDED.tipHeight + 1, index_block_hash: upstream.tip().index_block_hash, txs: [] });
    expect(upstream.rpc.publish('block', { height: 1 })).toBe(1);
    expect(await next()).toBe('{"jsonrpc":"2.0","method":"block","params":{"height":1}}');
    expect(upstream.rpc.connections).toBe(1);
    expect(upstream.openWebSockets).toBe(1);
  });

  it('still echoes on the other WebSocket paths', async () => {
    const { next, ws } = await connect('/socket.io/?EIO=4&transport=websocket');
    ws.send('40');
    expect(await next()).toBe('echo:40');
  });
});
