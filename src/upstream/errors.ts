/**
 * Failures of an upstream: a transport failure (thrown by undici and classified here), or an
 * HTTP answer that is not an answer to the request (a 429, a gateway 5xx, an unsolicited 304,
 * a body that is not what it claims; see answer-verdict.ts).
 */
/**
 * timeout: no answer in time; connect: unreachable (or no healthy upstream); reset: the
 * connection broke; 5xx: an upstream server error; invalid: a body that is not what it
 * claims; overloaded: every usable upstream's request queue is full; rate_limited: the
 * upstream answered 429 (or every usable upstream is inside a Retry-After it sent).
 */
export type UpstreamErrorKind = 'timeout' | 'connect' | 'reset' | '5xx' | 'invalid' | 'overloaded' | 'rate_limited';

export class UpstreamError extends Error {
  /** For `rate_limited`: how long the upstream asked to be left alone (milliseconds). */
  readonly retryAfterMs?: number;

  constructor(
    readonly kind: UpstreamErrorKind,
    readonly upstream: string,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    this.name = 'UpstreamError';
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const INVALID_CODES = new Set(['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'HPE_INVALID_CONSTANT', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);

/** One table maps an undici/Node error code to the kind of failure. */
export function classifyTransportError(error: unknown, upstream: string): UpstreamError {
  if (error instanceof UpstreamError) return error;
  const name = (error as { name?: string } | undefined)?.name ?? '';
  // The request deadline aborts through an AbortSignal.timeout().
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new UpstreamError('timeout', upstream, `timeout from ${upstream}: request deadline passed`, { cause: error });
  }
  const code = (error as { code?: string } | undefined)?.code ?? '';
  const kind: UpstreamErrorKind = TIMEOUT_CODES.has(code) ? 'timeout' : CONNECT_CODES.has(code) ? 'connect' : INVALID_CODES.has(code) ? 'invalid' : 'reset';
  const message = error instanceof Error ? error.message : String(error);
  return new UpstreamError(kind, upstream, `${kind} from ${upstream}: ${message}`, { cause: error });
}
