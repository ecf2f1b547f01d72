import { describe, expect, it } from 'vitest';
import {
  normalizeHashString,
  notificationTopicKey,
  readClientMessage,
  renderReply,
  subscriptionRefused,
  type ClientMessageOutcome,
} from '../../src/live/rpc-topics.js';

const ADDRESS = 'SP000000000000000000002Q6VF78';
const CONTRACT = `${ADDRESS}.pox-4`;
const TX_ID = `0x${'ab'.repeat(32)}`;

const read = (text: string): ClientMessageOutcome => readClientMessage(Buffer.from(text), false);
const reply = (text: string): string | undefined => renderReply(read(text).reply);
const keys = (outcome: ClientMessageOutcome): string[] => outcome.changes.map((change) => `${change.action} ${change.topic.key}`);
const subscribe = (id: unknown, params: unknown): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'subscribe', params });

describe('readClientMessage: the upstream channel’s replies', () => {
  it('subscribes to the plain events with an empty result', () => {
    for (const event of ['block', 'microblock', 'mempool', 'nft_event']) {
      const outcome = read(subscribe(1, { event }));
      expect(renderReply(outcome.reply)).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
      expect(keys(outcome)).toEqual([`subscribe ${event}`]);
      expect(outcome.changes[0]?.topic.upstreamParams).toEqual({ event });
    }
  });

  it('normalizes a tx_id (no 0x, upper case) and answers with the normalized one', () => {
    const outcome = read(subscribe('a', { event: 'tx_update', tx_id: 'AB'.repeat(32) }));
    expect(renderReply(outcome.reply)).toBe(`{"jsonrpc":"2.0","id":"a","result":{"tx_id":"${TX_ID}"}}`);
    expect(keys(outcome)).toEqual([`subscribe tx_update:${TX_ID}`]);
    expect(outcome.changes[0]?.topic.upstreamParams).toEqual({ event: 'tx_update', tx_id: TX_ID });
    expect(keys(read(subscribe(2, { event: 'tx_update', tx_id: `0X${'AB'.repeat(32)}` })))).toEqual([`subscribe tx_update:${TX_ID}`]);
  });

  it('refuses a bad tx_id, a bad address and an unknown event with the upstream’s messages', () => {
    expect(reply(subscribe(3, { event: 'tx_update', tx_id: '0x12' }))).toBe(
      '{"jsonrpc":"2.0","id":3,"error":{"message":"Invalid params","code":-32602,"data":"invalid tx_id"}}',
    );
    expect(reply(subscribe(3, { event: 'tx_update', tx_id: `0x${'zz'.repeat(32)}` }))).toContain('"data":"invalid tx_id"');
    expect(reply(subscribe(4, { event: 'address_tx_update', address: 'SPnope' }))).toBe(
      '{"jsonrpc":"2.0","id":4,"error":{"message":"Invalid params","code":-32602,"data":"invalid address"}}',
    );
    expect(reply(subscribe(4, { event: 'address_balance_update', address: 7 }))).toContain('"data":"invalid address"');
    expect(reply(subscribe(5, { event: 'blocks' }))).toBe(
      '{"jsonrpc":"2.0","id":5,"error":{"message":"Invalid params","code":-32602,"data":"subscription request must use a valid event name"}}',
    );
    expect(reply(subscribe(6, {}))).toBe(
      '{"jsonrpc":"2.0","id":6,"error":{"message":"Invalid params","code":-32602,"data":"subscription requests must include an event name"}}',
    );
    expect(reply(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'subscribe' }))).toContain('"data":"subscription requests must include an event name"');
    expect(read(subscribe(4, { event: 'address_tx_update', address: 'SPnope' })).changes).toEqual([]);
  });

  it('keys address topics per event, contracts included', () => {
    const outcome = read(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'subscribe', params: { event: 'address_tx_update', address: ADDRESS } },
        { jsonrpc: '2.0', id: 2, method: 'subscribe', params: { event: 'address_balance_update', address: CONTRACT } },
      ]),
    );
    expect(keys(outcome)).toEqual([`subscribe address_tx_update:${ADDRESS}`, `subscribe address_balance_update:${CONTRACT}`]);
    expect(renderReply(outcome.reply)).toBe(
      `[{"jsonrpc":"2.0","id":1,"result":{"address":"${ADDRESS}"}},{"jsonrpc":"2.0","id":2,"result":{"address":"${CONTRACT}"}}]`,
    );
  });

  it('answers unsubscribe like subscribe and marks it as an unsubscribe', () => {
    const outcome = read(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'unsubscribe', params: { event: 'block' } }));
    expect(renderReply(outcome.reply)).toBe('{"jsonrpc":"2.0","id":9,"result":{}}');
    expect(keys(outcome)).toEqual(['unsubscribe block']);
  });

  it('echoes nft params as sent and keys them with their text', () => {
    const asset = 'SP2X.nft::token';
    const outcome = read(subscribe(1, { event: 'nft_asset_event', asset_identifier: asset, value: '0x0100' }));
    expect(renderReply(outcome.reply)).toBe(`{"jsonrpc":"2.0","id":1,"result":{"asset_identifier":"${asset}","value":"0x0100"}}`);
    expect(keys(outcome)).toEqual([`subscribe nft_asset_event:${asset}+0x0100`]);
    // Missing fields: the upstream answers {} and keys "undefined+undefined".
    const empty = read(subscribe(2, { event: 'nft_asset_event' }));
    expect(renderReply(empty.reply)).toBe('{"jsonrpc":"2.0","id":2,"result":{}}');
    expect(keys(empty)).toEqual(['subscribe nft_asset_event:undefined+undefined']);
    const collection = read(subscribe(3, { event: 'nft_collection_event', asset_identifier: asset }));
    expect(keys(collection)).toEqual([`subscribe nft_collection_event:${asset}`]);
    // A non-string identifier is a key no notification can match: answered, nothing held.
    const odd = read(subscribe(4, { event: 'nft_collection_event', asset_identifier: 5 }));
    expect(renderReply(odd.reply)).toBe('{"jsonrpc":"2.0","id":4,"result":{"asset_identifier":5}}');
    expect(odd.changes).toEqual([]);
  });

  it('answers unknown methods with methodNotFound', () => {
    expect(reply(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }))).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"message":"Method not found","code":-32601}}',
    );
  });

  it('answers bad JSON with a parse error carrying the text, id null', () => {
    expect(reply('{oops')).toBe('{"jsonrpc":"2.0","id":null,"error":{"message":"Parse error","code":-32700,"data":"{oops"}}');
  });

  it('answers a binary frame with the upstream’s parse error', () => {
    const outcome = readClientMessage(Buffer.from(subscribe(1, { event: 'block' })), true);
    expect(renderReply(outcome.reply)).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"message":"Parse error","code":-32700,"data":"unexpected data type: Buffer"}}',
    );
    expect(outcome.changes).toEqual([]);
  });

  it('ignores client notifications, alone and in a batch', () => {
    expect(read(JSON.stringify({ jsonrpc: '2.0', method: 'subscribe', params: { event: 'block' } }))).toEqual({ changes: [], reply: { kind: 'none' } });
    expect(reply(JSON.stringify([{ jsonrpc: '2.0', method: 'subscribe', params: { event: 'block' } }]))).toBe('[]');
  });

  it('answers invalid requests, client responses and an empty batch as the upstream does', () => {
    expect(reply('[]')).toBe('{"jsonrpc":"2.0","id":null,"error":{"message":"Invalid request","code":-32600,"data":[]}}');
    expect(reply('{"id":1,"method":"subscribe"}')).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"message":"Invalid request","code":-32600,"data":{"id":1,"method":"subscribe"}}}',
    );
    expect(reply('{"jsonrpc":"2.0","id":1,"result":5}')).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"message":"Invalid request","code":-32600,"data":"unexpected success msg from client"}}',
    );
    expect(reply('{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}')).toBe(
      '{"jsonrpc":"2.0","id":2,"error":{"message":"Invalid request","code":-32600,"data":"unexpected error msg from client"}}',
    );
    expect(reply('5')).toBe('{"jsonrpc":"2.0","id":null,"error":{"message":"Invalid request","code":-32600,"data":5}}');
  });

  it('fails a whole batch when a handler throws, keeping the changes made before', () => {
    const outcome = read(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'subscribe', params: { event: 'block' } },
        { jsonrpc: '2.0', id: 2, method: 'subscribe', params: { event: 'nft_asset_event', asset_identifier: { toString: 1 }, value: 'x' } },
        { jsonrpc: '2.0', id: 3, method: 'subscribe', params: { event: 'mempool' } },
      ]),
    );
    expect(renderReply(outcome.reply)).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"message":"Internal error","code":-32603,"data":"TypeError: Cannot convert object to primitive value"}}',
    );
    expect(keys(outcome)).toEqual(['subscribe block']);
  });

  it('tells each change its request id and response index, for a refusal in its place', () => {
    const outcome = read(
      JSON.stringify([
        { jsonrpc: '2.0', method: 'subscribe', params: { event: 'microblock' } },
        { jsonrpc: '2.0', id: 'x', method: 'ping' },
        { jsonrpc: '2.0', id: 'y', method: 'subscribe', params: { event: 'block' } },
      ]),
    );
    expect(outcome.changes.map(({ id, response }) => [id, response])).toEqual([['y', 1]]);
    if (outcome.reply.kind !== 'responses') throw new Error('expected responses');
    outcome.reply.responses[1] = subscriptionRefused('y', 'at most 1');
    expect(renderReply(outcome.reply)).toBe(
      '[{"jsonrpc":"2.0","id":"x","error":{"message":"Method not found","code":-32601}},{"jsonrpc":"2.0","id":"y","error":{"message":"Too many subscriptions","code":-32000,"data":"at most 1"}}]',
    );
  });
});

describe('normalizeHashString', () => {
  it('accepts 32 bytes of hex with or without 0x, nothing else', () => {
    expect(normalizeHashString('AB'.repeat(32))).toBe(TX_ID);
    expect(normalizeHashString(`0x${'ab'.repeat(32)}`)).toBe(TX_ID);
    expect(normalizeHashString(`0x${'ab'.repeat(31)}zz`)).toBe(false);
    expect(normalizeHashString(`0x${'ab'.repeat(33)}`)).toBe(false);
    expect(normalizeHashString(`xx${'ab'.repeat(32)}`)).toBe(false);
    expect(normalizeHashString(12)).toBe(false);
  });
});

describe('notificationTopicKey', () => {
  it('keys each notification by the field the upstream matches subscribers on', () => {
    expect(notificationTopicKey('block', { height: 1 })).toBe('block');
    expect(notificationTopicKey('mempool', {})).toBe('mempool');
    expect(notificationTopicKey('tx_update', { tx_id: TX_ID })).toBe(`tx_update:${TX_ID}`);
    expect(notificationTopicKey('address_tx_update', { address: ADDRESS, tx_id: TX_ID })).toBe(`address_tx_update:${ADDRESS}`);
    expect(notificationTopicKey('address_balance_update', { address: ADDRESS })).toBe(`address_balance_update:${ADDRESS}`);
    expect(notificationTopicKey('nft_asset_event', { asset_identifier: 'a::b', value: { hex: '0x01', repr: 'u1' } })).toBe('nft_asset_event:a::b+0x01');
    expect(notificationTopicKey('nft_collection_event', { asset_identifier: 'a::b' })).toBe('nft_collection_event:a::b');
  });

  it('is undefined for unknown methods and malformed params', () => {
    expect(notificationTopicKey('subscribe', {})).toBeUndefined();
    expect(notificationTopicKey('tx_update', null)).toBeUndefined();
    expect(notificationTopicKey('tx_update', { tx_id: 5 })).toBeUndefined();
    expect(notificationTopicKey('address_tx_update', [ADDRESS])).toBeUndefined();
    expect(notificationTopicKey('nft_asset_event', { asset_identifier: 'a', value: '0x01' })).toBeUndefined();
  });
});
