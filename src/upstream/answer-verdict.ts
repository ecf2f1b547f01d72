/**
 * What an upstream's HTTP answer says, before anything looks at its body's meaning: an answer
 * to the request, the upstream's handler refusing this one input, or a failure of that
 * upstream. Only failures count against the upstream's health (breaker, /ready); a handler's
 * refusal is the request's own answer and says nothing about the upstream.
 */
import { parseBoundedJson } from './bounded-json.js';
import { UpstreamError, type UpstreamErrorKind } from './errors.js';

export type AnswerVerdict =
  /** An answer to check and use (2xx, 3xx, a solicited 304, 404). */
  | { kind: 'answer' }
  /**
   * The upstream's handler answered this input with an error in its own JSON shape (a 4xx, or a
   * 500 such as the one for a negative block height): the client's answer, never retried.
   */
  | { kind: 'refusal' }
  | { kind: 'failure'; error: UpstreamError };

export interface AnswerFacts {
  upstream: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Whether the request carried If-None-Match (only then is a 304 an answer). */
  conditional: boolean;
  /** The path asked (and query): under the stacks-node RPC, refusals come in plain text. */
  path?: string;
}

/**
 * Paths the upstream proxies to its stacks-node (everything under /v2 but its BNS prices,
 * read-surface §1.3): the node refuses bad input (a call-read's malformed arguments) with a 4xx
 * in text/plain, which is that request's answer, not a failure of the upstream.
 */
export const isNodeRpcPath = (path: string): boolean => path.startsWith('/v2/') && !path.startsWith('/v2/prices/');

/** Statuses that a gateway, load balancer or the upstream's own overload handling sends. */
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/**
 * An error body in the upstream's own shape: JSON (by content type and by parse) holding an
 * object with a string `error` or `message` (Fastify's `{statusCode, error, message}`, or the
 * API's `{"error": ...}`). An HTML page from something in between is not one.
 */
export function isUpstreamErrorBody(headers: Record<string, string>, body: Buffer): boolean {
  if (!(headers['content-type'] ?? '').includes('json')) return false;
  const parsed = parseBoundedJson(body);
  if (parsed === undefined || parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
  const { error, message } = parsed as { error?: unknown; message?: unknown };
  return typeof error === 'string' || typeof message === 'string';
}

const fail = (kind: UpstreamErrorKind, facts: AnswerFacts, why: string): AnswerVerdict => ({
  kind: 'failure',
  error: new UpstreamError(kind, facts.upstream, `${why} from ${facts.upstream} (status ${facts.status})`),
});

export function judgeAnswer(facts: AnswerFacts): AnswerVerdict {
  const { status } = facts;
  if (status === 429) return fail('rate_limited', facts, 'rate limited');
  if (status === 304) return facts.conditional ? { kind: 'answer' } : fail('invalid', facts, 'an unsolicited 304 (no If-None-Match was sent)');
  if (GATEWAY_STATUSES.has(status)) return fail('5xx', facts, 'a gateway or overload error');
  if (status === 404 || status < 400) return { kind: 'answer' };
  const nodeRefusal = status < 500 && facts.path !== undefined && isNodeRpcPath(facts.path);
  const refusal = nodeRefusal || ((status === 500 || status < 500) && isUpstreamErrorBody(facts.headers, facts.body));
  if (refusal) return { kind: 'refusal' };
  return status >= 500 ? fail('5xx', facts, 'a server error') : fail('invalid', facts, "an error answer not in the upstream's shape");
}
