/**
 * An upstream for framing tests: a raw TCP server that parses HTTP/1.1 requests itself, as
 * strictly as the upstream's server frames them (Content-Length, else chunked, else no body),
 * and records every request it parses with the connection it came on. A body the proxy sends
 * unframed shows up here as the extra requests the upstream would have executed, so tests and
 * the fuzz lane can ask "did the upstream parse exactly the requests the clients sent?".
 * Each request gets a small JSON answer naming it, unless the test answers it itself.
 */
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ParsedRequest {
  /** 1 for the first connection the upstream accepted, 2 for the next, ... */
  connection: number;
  method: string;
  target: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

/** Answers one parsed request on its socket; return false to give the default answer instead. */
export type FramingResponder = (request: ParsedRequest, socket: Socket) => boolean;

export interface FramingUpstream {
  url: string;
  /** Every request parsed, in order, the chain-tip polls (`GET /extended`) included. */
  readonly requests: ParsedRequest[];
  /** Bytes no request could be parsed from (a malformed head or chunk), with their connection. */
  readonly unparsed: Array<{ connection: number; bytes: string }>;
  /** The requests other than tip polls. */
  clientRequests(): ParsedRequest[];
  respondWith(responder: FramingResponder | undefined): void;
  reset(): void;
  close(): Promise<void>;
}

const HEAD_END = '\r\n\r\n';
/** Far above any test's head; a head longer than this is unparsed garbage. */
const MAX_HEAD_BYTES = 64 * 1024;

type Parse = { kind: 'request'; request: Omit<ParsedRequest, 'connection'>; rest: Buffer } | { kind: 'incomplete' } | { kind: 'invalid' };

/** One request from the front of `buffer`, framed as RFC 9112 §6.3 says. */
export function parseRequest(buffer: Buffer): Parse {
  const headEnd = buffer.indexOf(HEAD_END);
  if (headEnd < 0) return buffer.length > MAX_HEAD_BYTES ? { kind: 'invalid' } : { kind: 'incomplete' };
  const [requestLine = '', ...lines] = buffer.subarray(0, headEnd).toString('latin1').split('\r\n');
  const parts = requestLine.split(' ');
  if (parts.length !== 3 || !/^[A-Z]+$/.test(parts[0] ?? '') || parts[2] !== 'HTTP/1.1') return { kind: 'invalid' };
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) return { kind: 'invalid' };
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const afterHead = buffer.subarray(headEnd + HEAD_END.length);
  const request = { method: parts[0] as string, target: parts[1] as string, headers };
  if (headers['transfer-encoding'] !== undefined) {
    if (headers['transfer-encoding'].toLowerCase() !== 'chunked' || headers['content-length'] !== undefined) return { kind: 'invalid' };
    return parseChunked(afterHead, request);
  }
  const lengthText = headers['content-length'];
  if (lengthText === undefined) return { kind: 'request', request: { ...request, body: Buffer.alloc(0) }, rest: afterHead };
  if (!/^\d+$/.test(lengthText)) return { kind: 'invalid' };
  const length = Number(lengthText);
  if (afterHead.length < length) return { kind: 'incomplete' };
  return { kind: 'request', request: { ...request, body: afterHead.subarray(0, length) }, rest: afterHead.subarray(length) };
}

function parseChunked(data: Buffer, request: Omit<ParsedRequest, 'connection' | 'body'>): Parse {
  const chunks: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return { kind: 'incomplete' };
    const sizeText = data.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '';
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return { kind: 'invalid' };
    const size = parseInt(sizeText, 16);
    const chunkStart = lineEnd + 2;
    if (size === 0) {
      // No trailers from the proxy: the last chunk ends with an empty line.
      if (data.length < chunkStart + 2) return { kind: 'incomplete' };
      if (data.subarray(chunkStart, chunkStart + 2).toString('latin1') !== '\r\n') return { kind: 'invalid' };
      return { kind: 'request', request: { ...request, body: Buffer.concat(chunks) }, rest: data.subarray(chunkStart + 2) };
    }
    if (data.length < chunkStart + size + 2) return { kind: 'incomplete' };
    chunks.push(data.subarray(chunkStart, chunkStart + size));
    if (data.subarray(chunkStart + size, chunkStart + size + 2).toString('latin1') !== '\r\n') return { kind: 'invalid' };
    at = chunkStart + size + 2;
  }
}

function defaultAnswer(request: ParsedRequest, socket: Socket): void {
  const body = JSON.stringify({ method: request.method, target: request.target, bodyBytes: request.body.length });
  const head = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  socket.write(request.method === 'HEAD' ? head : head + body);
}

export async function startFramingUpstream(): Promise<FramingUpstream> {
  const requests: ParsedRequest[] = [];
  const unparsed: Array<{ connection: number; bytes: string }> = [];
  const sockets = new Set<Socket>();
  let responder: FramingResponder | undefined;
  let connections = 0;

  const server = createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const parsed = parseRequest(buffer);
        if (parsed.kind === 'incomplete') return;
        if (parsed.kind === 'invalid') {
          unparsed.push({ connection, bytes: buffer.toString('latin1') });
          buffer = Buffer.alloc(0);
          socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
          return;
        }
        buffer = parsed.rest;
        const request = { connection, ...parsed.request };
        requests.push(request);
        if (!responder?.(request, socket)) defaultAnswer(request, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    unparsed,
    clientRequests: () => requests.filter((r) => !(r.method === 'GET' && r.target === '/extended')),
    respondWith: (next) => {
      responder = next;
    },
    reset: () => {
      requests.length = 0;
      unparsed.length = 0;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
