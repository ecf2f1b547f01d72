/**
 * The passthrough fuzz lane's cases and property (issue 14), pure: a few client requests on one
 * connection, pipelined, with any method, a Connection header listing any tokens (framing
 * headers among them), and a body that is absent, Content-Length framed or chunked and may hold
 * whole HTTP requests. The property: the upstream parses exactly the requests the clients sent
 * (no more, none split, each body whole and only on methods that carry one), and every client
 * request gets its own answer, in order.
 */
import fc from 'fast-check';
import type { ParsedRequest } from '../framing-upstream.js';
import type { Violation } from './properties.js';

export type FramedBody = { kind: 'none' } | { kind: 'length'; bytes: string } | { kind: 'chunked'; chunks: string[] };

export interface ClientMessage {
  method: string;
  path: string;
  /** The Connection header's tokens (none: no header); `close` is added to the last message only. */
  connection: string[];
  body: FramedBody;
}

export interface FramingCase {
  messages: ClientMessage[];
}

/** Every request the client sent, as the proxy must deliver it: sorted, since pipelined requests go side by side. */
export interface FramingReport {
  case: FramingCase;
  /** What the upstream parsed, one line each (see requestLine). */
  parsed: string[];
  /** Bytes the upstream could not parse as a request. */
  unparsed: string[];
  /** Everything the client received before the connection closed, or why it did not close. */
  received: { kind: 'closed'; bytes: string } | { kind: 'timeout'; bytes: string };
}

const METHODS_WITHOUT_BODY = new Set(['GET', 'HEAD', 'TRACE', 'DELETE', 'OPTIONS']);
const METHODS = ['GET', 'HEAD', 'TRACE', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH'];
/** Passthrough paths (none of them a read route or an own endpoint). */
const PATHS = ['/v2/info', '/v2/transactions', '/extended/v1/info', '/v2/fees/transfer?x=1', '/rosetta/v1/network/list'];
const CONNECTION_TOKENS = [
  'keep-alive',
  'content-length',
  'Content-Length',
  'transfer-encoding',
  'Transfer-Encoding',
  'host',
  'x-forwarded-for',
  'accept',
  'content-type',
  'te',
  'x-request-id',
  '',
];
const SMUGGLED = [
  'GET /extended/v1/SMUGGLED HTTP/1.1\r\nHost: up\r\nX-API-Key: forged\r\n\r\n',
  'POST /v2/SMUGGLED HTTP/1.1\r\nHost: up\r\nContent-Length: 4\r\n\r\nabcd',
  'GET /v2/SMUGGLED HTTP/1.1\r\nHost: up\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  '0\r\n\r\n',
  '\r\n',
  'Content-Length: 10\r\n\r\n',
];

const bodyBytes: fc.Arbitrary<string> = fc
  .array(fc.oneof({ arbitrary: fc.constantFrom(...SMUGGLED), weight: 2 }, { arbitrary: fc.string({ maxLength: 24 }), weight: 1 }), { maxLength: 3 })
  .map((pieces) => pieces.join(''));

const framedBody: fc.Arbitrary<FramedBody> = fc.oneof(
  fc.constant<FramedBody>({ kind: 'none' }),
  bodyBytes.map((bytes): FramedBody => ({ kind: 'length', bytes })),
  fc.array(bodyBytes, { maxLength: 3 }).map((chunks): FramedBody => ({ kind: 'chunked', chunks })),
);

const message: fc.Arbitrary<ClientMessage> = fc.record({
  method: fc.constantFrom(...METHODS),
  path: fc.constantFrom(...PATHS),
  connection: fc.array(fc.constantFrom(...CONNECTION_TOKENS), { maxLength: 4 }),
  body: framedBody,
});

export function framingCase(): fc.Arbitrary<FramingCase> {
  return fc.array(message, { minLength: 1, maxLength: 3 }).map((messages) => ({ messages }));
}

/** The bytes of one message; ASCII only, so one char is one byte (latin1 on the wire). */
function wireMessage(message: ClientMessage, last: boolean): string {
  const tokens = last ? [...message.connection, 'close'] : message.connection;
  const headers = ['Host: proxy.test'];
  if (tokens.length > 0) headers.push(`Connection: ${tokens.join(', ')}`);
  let body = '';
  if (message.body.kind === 'length') {
    headers.push(`Content-Length: ${message.body.bytes.length}`);
    body = message.body.bytes;
  } else if (message.body.kind === 'chunked') {
    headers.push('Transfer-Encoding: chunked');
    body = `${message.body.chunks
      .filter((chunk) => chunk.length > 0)
      .map((chunk) => `${chunk.length.toString(16)}\r\n${chunk}\r\n`)
      .join('')}0\r\n\r\n`;
  }
  return `${message.method} ${message.path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${body}`;
}

export function wireBytes(framing: FramingCase): string {
  return framing.messages.map((m, i) => wireMessage(m, i === framing.messages.length - 1)).join('');
}

const bodyOf = (message: ClientMessage): string =>
  METHODS_WITHOUT_BODY.has(message.method) || message.body.kind === 'none'
    ? ''
    : message.body.kind === 'length'
      ? message.body.bytes
      : message.body.chunks.join('');

/** A request as the upstream parsed it, or must have. */
export const requestLine = (method: string, target: string, body: string): string => `${method} ${target} ${JSON.stringify(body)}`;

export const parsedLine = (request: ParsedRequest): string => requestLine(request.method, request.target, request.body.toString('latin1'));

export function expectedRequests(framing: FramingCase): string[] {
  return framing.messages.map((m) => requestLine(m.method, m.path, bodyOf(m))).sort();
}

/** The client's answers in order, read by what each request was (a HEAD answer has no body). */
function answersOf(bytes: string, messages: ClientMessage[]): Array<{ status: number; body: string }> | string {
  const answers: Array<{ status: number; body: string }> = [];
  let rest = bytes;
  for (const message of messages) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return `answer ${answers.length + 1} of ${messages.length} missing or incomplete`;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const lengthLine = lines.find((line) => line.toLowerCase().startsWith('content-length:'));
    const length = message.method === 'HEAD' || lengthLine === undefined ? 0 : Number(lengthLine.slice('content-length:'.length).trim());
    answers.push({ status: Number(statusLine.split(' ')[1]), body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return rest.length > 0 ? `${rest.length} bytes after the last answer` : answers;
}

export function judgeFramingCase(report: FramingReport): Violation[] {
  const violations: Violation[] = [];
  const expected = expectedRequests(report.case);
  const extra = report.parsed.filter((line) => !expected.includes(line));
  if (extra.length > 0 || report.parsed.length !== expected.length || report.unparsed.length > 0) {
    violations.push({
      property: 'framing',
      signature: `framing:${extra.length > 0 ? 'extra-request' : report.unparsed.length > 0 ? 'unparsed-bytes' : 'request-count'}`,
      detail: `upstream parsed [${report.parsed.join(' | ')}], expected [${expected.join(' | ')}]${report.unparsed.length > 0 ? `; unparsed ${JSON.stringify(report.unparsed)}` : ''}`,
    });
  } else if (report.parsed.join('\n') !== expected.join('\n')) {
    violations.push({
      property: 'framing',
      signature: 'framing:altered-request',
      detail: `upstream parsed [${report.parsed.join(' | ')}], expected [${expected.join(' | ')}]`,
    });
  }
  if (report.received.kind === 'timeout') {
    violations.push({
      property: 'answers',
      signature: 'answers:passthrough-framing:timeout',
      detail: `connection still open; received ${JSON.stringify(report.received.bytes.slice(0, 300))}`,
    });
    return violations;
  }
  const answers = answersOf(report.received.bytes, report.case.messages);
  if (typeof answers === 'string') {
    violations.push({
      property: 'answers',
      signature: 'answers:passthrough-framing:count',
      detail: `${answers}: ${JSON.stringify(report.received.bytes.slice(0, 300))}`,
    });
    return violations;
  }
  // The framing upstream's answer names the request it answers: each client gets its own.
  for (const [index, message] of report.case.messages.entries()) {
    const answer = answers[index];
    const own =
      message.method === 'HEAD' || answer?.body === JSON.stringify({ method: message.method, target: message.path, bodyBytes: bodyOf(message).length });
    if (answer?.status !== 200 || !own) {
      violations.push({
        property: 'answers',
        signature: `answers:passthrough-framing:${answer?.status === 200 ? 'wrong-answer' : answer?.status}`,
        detail: `request ${index + 1} (${message.method} ${message.path}) answered ${answer?.status} ${answer?.body.slice(0, 200)}`,
      });
    }
  }
  return violations;
}

/** One line for the case, then one per violation. */
export function describeFramingCase(report: FramingReport, violations: Violation[]): string {
  return [JSON.stringify(wireBytes(report.case)), ...violations.map((v) => `  [${v.property}] ${v.detail}`)].join('\n');
}
