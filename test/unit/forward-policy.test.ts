import { describe, expect, it } from 'vitest';
import { clientResponseHeaders, isAllowedPath, requestBodyFraming, upstreamRequestHeaders } from '../../src/http/forward-policy.js';

const DEFAULT_PREFIXES = ['/extended', '/v1/', '/v2/', '/v3/', '/rosetta/', '/socket.io/'];

describe('isAllowedPath', () => {
  it.each(['/extended', '/extended/', '/extended/v1/ws', '/v1/x', '/v2/info', '/v3/', '/rosetta/v1/network/list', '/socket.io/'])('allows %s', (path) => {
    expect(isAllowedPath(path, DEFAULT_PREFIXES)).toBe(true);
  });
  it.each(['/', '/extendedx', '/v1', '/v2', '/v4/x', '/rosetta', '/socket.io', '/metrics', '/Extended'])('does not allow %s', (path) => {
    expect(isAllowedPath(path, DEFAULT_PREFIXES)).toBe(false);
  });
  it('allows nothing with no prefixes', () => {
    expect(isAllowedPath('/extended', [])).toBe(false);
  });
});

const context = { requestId: 'rid-1', clientAddress: '10.0.0.7', upgrade: false, operatorHeaders: {} };

describe('upstreamRequestHeaders', () => {
  it('forwards the allow-listed headers and no credentials, cookies or hop-by-hop headers', () => {
    const headers = upstreamRequestHeaders(
      {
        host: 'proxy.example',
        accept: 'application/json',
        'accept-encoding': 'gzip',
        'accept-language': 'en',
        'content-type': 'application/octet-stream',
        'content-length': '3',
        'user-agent': 'ua/1',
        'if-none-match': '"e"',
        'if-modified-since': 'Tue, 01 Jan 2030 00:00:00 GMT',
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
        cookie: 'session=1',
        authorization: 'Bearer client',
        'x-api-key': 'client-key',
        'proxy-authorization': 'Basic x',
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        trailer: 'x',
        upgrade: 'websocket',
        expect: '100-continue',
        'x-request-id': 'client-id',
        'x-custom': 'y',
      },
      context,
    );
    expect(headers).toEqual({
      accept: 'application/json',
      'accept-encoding': 'gzip',
      'accept-language': 'en',
      'content-type': 'application/octet-stream',
      'user-agent': 'ua/1',
      'if-none-match': '"e"',
      'if-modified-since': 'Tue, 01 Jan 2030 00:00:00 GMT',
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
      'x-forwarded-for': '10.0.0.7',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'proxy.example',
      'x-request-id': 'rid-1',
    });
  });

  it("drops the headers the client's Connection header names", () => {
    const headers = upstreamRequestHeaders(
      { connection: 'close, Accept-Language, x-forwarded-for', 'accept-language': 'en', 'x-forwarded-for': '1.2.3.4' },
      context,
    );
    expect(headers['accept-language']).toBeUndefined();
    expect(headers['x-forwarded-for']).toBe('10.0.0.7');
  });

  it("appends the client's address to its X-Forwarded-For chain and keeps only http or https as its proto", () => {
    expect(upstreamRequestHeaders({ 'x-forwarded-for': '1.2.3.4', 'x-forwarded-proto': 'https' }, context)).toMatchObject({
      'x-forwarded-for': '1.2.3.4, 10.0.0.7',
      'x-forwarded-proto': 'https',
    });
    expect(upstreamRequestHeaders({ 'x-forwarded-proto': 'javascript' }, context)['x-forwarded-proto']).toBe('http');
  });

  it('never forwards the framing headers, whatever Connection names', () => {
    for (const connection of ['keep-alive', 'keep-alive, content-length', 'content-length, transfer-encoding']) {
      const headers = upstreamRequestHeaders({ connection, 'content-length': '4', 'transfer-encoding': 'chunked' }, context);
      expect(headers['content-length'], connection).toBeUndefined();
      expect(headers['transfer-encoding'], connection).toBeUndefined();
    }
  });

  it('carries the WebSocket handshake on upgrades only', () => {
    const incoming = {
      'sec-websocket-key': 'k',
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'p',
      'sec-websocket-extensions': 'e',
      upgrade: 'websocket',
      connection: 'Upgrade',
    };
    expect(upstreamRequestHeaders(incoming, { ...context, upgrade: true })).toMatchObject({
      'sec-websocket-key': 'k',
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'p',
      'sec-websocket-extensions': 'e',
      upgrade: 'websocket',
      connection: 'Upgrade',
    });
    const plain = upstreamRequestHeaders(incoming, context);
    expect(Object.keys(plain).filter((name) => name.startsWith('sec-') || name === 'upgrade' || name === 'connection')).toEqual([]);
  });

  it("lets the operator's headers win over anything from the client", () => {
    const headers = upstreamRequestHeaders(
      { 'x-api-key': 'client', 'user-agent': 'client' },
      { ...context, operatorHeaders: { 'X-API-Key': 'operator', 'User-Agent': 'proxy' } },
    );
    expect(headers['x-api-key']).toBe('operator');
    expect(headers['user-agent']).toBe('proxy');
  });
});

describe('requestBodyFraming', () => {
  it.each(['GET', 'HEAD', 'TRACE', 'DELETE', 'OPTIONS'])('gives a %s no body, whatever its headers say', (method) => {
    expect(requestBodyFraming(method, { 'content-length': '128', connection: 'keep-alive, content-length' })).toEqual({ kind: 'none' });
    expect(requestBodyFraming(method, { 'transfer-encoding': 'chunked' })).toEqual({ kind: 'none' });
  });

  it('frames a body by the length Node parsed it with, else chunked, else none', () => {
    expect(requestBodyFraming('POST', { 'content-length': '3', connection: 'content-length' })).toEqual({ kind: 'length', length: '3' });
    expect(requestBodyFraming('PUT', { 'transfer-encoding': 'chunked', connection: 'transfer-encoding' })).toEqual({ kind: 'chunked' });
    expect(requestBodyFraming('PATCH', {})).toEqual({ kind: 'none' });
  });
});

describe('clientResponseHeaders', () => {
  it("drops the upstream connection's hop-by-hop headers and says whether the client's stays open", () => {
    const upstream = {
      'content-type': 'application/json',
      connection: 'keep-alive, x-hop',
      'keep-alive': 'timeout=5',
      'x-hop': '1',
      'transfer-encoding': 'chunked',
      etag: '"e"',
    };
    expect(clientResponseHeaders(upstream, true)).toEqual(['content-type', 'application/json', 'etag', '"e"', 'connection', 'keep-alive']);
    expect(clientResponseHeaders(upstream, false)).toEqual(['content-type', 'application/json', 'etag', '"e"', 'connection', 'close']);
  });

  it("adds the proxy's own headers after the upstream's, each unless the upstream answer has one of that name", () => {
    const upstream = {
      'content-type': 'application/json',
      'x-cache': 'HIT',
      'set-cookie': ['a=1', 'b=2'],
      'x-gone': undefined,
      connection: 'x-request-id',
      'x-request-id': 'hop',
    };
    expect(clientResponseHeaders(upstream, true, ['x-request-id', 'r-1', 'x-cache', 'BYPASS', 'x-gone', 'ours'])).toEqual([
      'content-type',
      'application/json',
      'x-cache',
      'HIT',
      'set-cookie',
      ['a=1', 'b=2'],
      'connection',
      'keep-alive',
      // The upstream's X-Request-Id was its connection's own (named by Connection): the proxy's goes.
      'x-request-id',
      'r-1',
      'x-gone',
      'ours',
    ]);
  });
});
