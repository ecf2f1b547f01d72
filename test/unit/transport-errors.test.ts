/**
 * classifyTransportError (src/upstream/errors.ts): one table from what undici and Node throw to
 * the kind of upstream failure, which decides retries, breaker counts and the client's status.
 * The errors are undici's own classes where it has one, and Node-shaped system errors (an
 * Error with `code` and `syscall`) where Node raises them.
 */
import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { classifyTransportError, UpstreamError, type UpstreamErrorKind } from '../../src/upstream/errors.js';

const UPSTREAM = 'https://api.example';

function systemError(code: string, syscall = 'connect'): Error {
  return Object.assign(new Error(`${syscall} ${code} 127.0.0.1:3999`), { code, syscall, errno: -1 });
}

/**
 * As undici's HTTP/1 parser raises it: `new HTTPParserError(message, code, data)` with `code`
 * prefixed `HPE_` (lib/dispatcher/client-h1.js). Its type declaration lists other parameters.
 */
function parserError(message: string, llhttpCode: string): Error {
  const HTTPParserError = errors.HTTPParserError as unknown as new (message: string, code: string) => Error;
  return new HTTPParserError(message, llhttpCode);
}

const CASES: Array<{ error: unknown; kind: UpstreamErrorKind; because: string }> = [
  // timeout
  { error: new errors.HeadersTimeoutError(), kind: 'timeout', because: 'UND_ERR_HEADERS_TIMEOUT' },
  { error: new errors.BodyTimeoutError(), kind: 'timeout', because: 'UND_ERR_BODY_TIMEOUT' },
  { error: new errors.ConnectTimeoutError(), kind: 'timeout', because: 'UND_ERR_CONNECT_TIMEOUT' },
  { error: systemError('ETIMEDOUT'), kind: 'timeout', because: 'ETIMEDOUT' },
  { error: new DOMException('The operation was aborted due to timeout', 'TimeoutError'), kind: 'timeout', because: 'AbortSignal.timeout() reason' },
  { error: new DOMException('This operation was aborted', 'AbortError'), kind: 'timeout', because: 'name AbortError' },
  { error: new errors.RequestAbortedError(), kind: 'timeout', because: "undici's aborted request is named AbortError" },
  // The name decides before the code: an abort is the deadline, whatever code it carries.
  { error: Object.assign(new Error('aborted'), { name: 'AbortError', code: 'ECONNREFUSED' }), kind: 'timeout', because: 'name before code' },
  // connect
  { error: systemError('ECONNREFUSED'), kind: 'connect', because: 'ECONNREFUSED' },
  { error: systemError('ENOTFOUND', 'getaddrinfo'), kind: 'connect', because: 'ENOTFOUND' },
  { error: systemError('EAI_AGAIN', 'getaddrinfo'), kind: 'connect', because: 'EAI_AGAIN' },
  { error: systemError('EHOSTUNREACH'), kind: 'connect', because: 'EHOSTUNREACH' },
  { error: systemError('ENETUNREACH'), kind: 'connect', because: 'ENETUNREACH' },
  // invalid
  { error: new errors.ResponseExceededMaxSizeError(), kind: 'invalid', because: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' },
  { error: parserError('Expected HTTP/', 'INVALID_CONSTANT'), kind: 'invalid', because: 'HPE_INVALID_CONSTANT' },
  { error: new errors.ResponseContentLengthMismatchError(), kind: 'invalid', because: 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' },
  // reset: any other transport failure
  { error: systemError('ECONNRESET', 'read'), kind: 'reset', because: 'ECONNRESET' },
  { error: systemError('EPIPE', 'write'), kind: 'reset', because: 'EPIPE' },
  { error: new errors.SocketError('other side closed'), kind: 'reset', because: 'UND_ERR_SOCKET' },
  { error: new errors.ClientClosedError(), kind: 'reset', because: 'UND_ERR_CLOSED' },
  { error: new errors.ClientDestroyedError(), kind: 'reset', because: 'UND_ERR_DESTROYED' },
  { error: parserError('Invalid header value char', 'INVALID_HEADER_TOKEN'), kind: 'reset', because: 'a parser error other than HPE_INVALID_CONSTANT' },
  { error: new Error('no code at all'), kind: 'reset', because: 'an Error without code' },
  { error: 'a thrown string', kind: 'reset', because: 'not an Error' },
  { error: undefined, kind: 'reset', because: 'undefined' },
  { error: null, kind: 'reset', because: 'null' },
];

describe('transport-error classifier', () => {
  it.each(CASES)('$because -> $kind', ({ error, kind }) => {
    const classified = classifyTransportError(error, UPSTREAM);
    expect(classified).toBeInstanceOf(UpstreamError);
    expect(classified.kind).toBe(kind);
    expect(classified.upstream).toBe(UPSTREAM);
    expect(classified.name).toBe('UpstreamError');
    expect(classified.cause).toBe(error);
  });

  it('names the kind, the upstream and the original message', () => {
    const classified = classifyTransportError(systemError('ECONNREFUSED'), UPSTREAM);
    expect(classified.message).toBe(`connect from ${UPSTREAM}: connect ECONNREFUSED 127.0.0.1:3999`);
  });

  it('says "request deadline passed" for an abort, whatever the abort said', () => {
    const classified = classifyTransportError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'), UPSTREAM);
    expect(classified.message).toBe(`timeout from ${UPSTREAM}: request deadline passed`);
  });

  it('uses the text of a thrown non-Error as the message', () => {
    expect(classifyTransportError('a thrown string', UPSTREAM).message).toBe(`reset from ${UPSTREAM}: a thrown string`);
  });

  it('passes an UpstreamError through unchanged', () => {
    const original = new UpstreamError('overloaded', 'https://other.example', 'every queue is full');
    expect(classifyTransportError(original, UPSTREAM)).toBe(original);
  });
});
