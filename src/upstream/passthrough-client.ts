/**
 * The passthrough's HTTP transport: one undici Pool per upstream, apart from the read client's
 * (client.ts), so that slow passthrough answers never hold the connections reads are bounded by.
 * undici frames every request itself: a body goes with exactly the Content-Length given (a
 * body longer or shorter is an error, never bytes left on the pooled socket), or chunked, and
 * a request without one carries none; an answer it did not ask for (a 101 on a request that
 * asked for no upgrade, bytes on an idle connection) destroys the connection instead of being
 * read as the answer to the next request. No retries: a passthrough request may be a write.
 */
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { classifyTransportError, UpstreamError } from './errors.js';

export interface PassthroughClientSettings {
  connectTimeoutMs: number;
  /** The total deadline of one answer (passthrough.answerDeadlineMs); undici's own timers never fire first. */
  answerDeadlineMs: number;
}

export interface PassthroughRequest {
  origin: string;
  method: string;
  /** The decided path and query (request-target.ts). */
  path: string;
  /** From forward-policy.ts; `content-length` only when `body` is that long. */
  headers: Record<string, string>;
  /** Absent: no body at all. */
  body?: Readable;
  /** Aborts the request and its answer's body (the deadline, a client gone). */
  signal: AbortSignal;
}

export interface PassthroughAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export class PassthroughClient {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly settings: PassthroughClientSettings) {}

  /** The answer's head; its body streams. Rejects with an UpstreamError. */
  async send(request: PassthroughRequest): Promise<PassthroughAnswer> {
    try {
      const answer = await this.poolFor(request.origin).request({
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body ?? null,
        signal: request.signal,
      });
      return { status: answer.statusCode, headers: answer.headers, body: answer.body };
    } catch (error) {
      throw classifyPassthroughError(error, request.origin);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close().catch(() => pool.destroy())));
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        // As many connections as requests in flight, as before (Node's global agent had no cap):
        // each passthrough request holds its client's connection too, so clients bound them.
        connections: null,
        connectTimeout: this.settings.connectTimeoutMs,
        headersTimeout: this.settings.answerDeadlineMs,
        bodyTimeout: this.settings.answerDeadlineMs,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

/** A transport failure as the upstream failure it is; undici's 'bad upgrade' is an answer nobody asked for. */
export function classifyPassthroughError(error: unknown, origin: string): UpstreamError {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  if (code === 'UND_ERR_SOCKET' && message === 'bad upgrade') {
    return new UpstreamError('invalid', origin, `invalid from ${origin}: 101 Switching Protocols to a request that asked for no upgrade`, { cause: error });
  }
  return classifyTransportError(error, origin);
}
