/**
 * HTTP/1.1 over a plain TCP socket, for what fetch and node:http will not send as given:
 * absolute-form targets, backslashes, pipelined requests, Expect, unfinished heads.
 */
import { connect, type Socket } from 'node:net';

/** Opens a connection to the proxy; errors (a reset by the server) are ignored. */
export async function openSocket(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return socket;
}

/** Everything the server sends until it closes the connection. */
export function readUntilClosed(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1'))));
}

/** Sends `bytes` on a new connection and returns everything the server sent until it closed. */
export async function exchangeRaw(port: number, bytes: string): Promise<string> {
  const socket = await openSocket(port);
  const received = readUntilClosed(socket);
  socket.write(bytes, 'latin1');
  return received;
}

/** One GET with its target exactly as given; the connection closes after the answer. */
export function rawGet(port: number, target: string, headers: Record<string, string> = {}): Promise<string> {
  const lines = [`GET ${target} HTTP/1.1`, 'Host: proxy.test', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'Connection: close'];
  return exchangeRaw(port, `${lines.join('\r\n')}\r\n\r\n`);
}

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits a stream of answers with Content-Length bodies (what the proxy sends) into responses. */
export function parseResponses(stream: string): ParsedResponse[] {
  const out: ParsedResponse[] = [];
  let rest = stream;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete response head: ${rest.slice(0, 200)}`);
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}
