/**
 * One passthrough HTTP request, sent through the passthrough's undici pools
 * (upstream/passthrough-client.ts) and its answer streamed back. The guarantees (issue 14):
 *   - the upstream parses exactly the one request the client sent: the body goes only framed
 *     by the length Node parsed it with (or chunked), never on GET, HEAD, TRACE, DELETE or
 *     OPTIONS (there it is read and dropped), and no header the client sends changes that;
 *   - the answer has a total deadline (passthrough.answerDeadlineMs): passed before the answer's
 *     head, a 504 in the upstream's shape; passed mid-body, the client connection is cut, since
 *     its status is already sent;
 *   - an answer the request did not ask for (a 101 to a request that asked for no upgrade) is
 *     a 502, and the upstream connection it came on is closed by undici.
 * Failures are counted and logged (telemetry.passthroughFailed) with their kind.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { failureReply } from '../errors.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { abortAt } from '../upstream/abort-at.js';
import { classifyTransportError, type UpstreamError } from '../upstream/errors.js';
import type { PassthroughClient } from '../upstream/passthrough-client.js';
import { clientResponseHeaders, requestBodyFraming } from './forward-policy.js';
import { sendError } from './respond.js';

export interface ForwardOptions {
  client: PassthroughClient;
  answerDeadlineMs: number;
  telemetry: Telemetry;
}

/** The reason a request is aborted when its client has gone: nobody to answer, nothing to count. */
class ClientGone extends Error {
  override name = 'ClientGone';
}

/**
 * Sends `req` to `origin` with `headers` (forward-policy.ts, framing not included) and answers
 * `res`; `answerHeaders` (a name-value list: the request id, ratelimit-*) go on every answer.
 */
export type ForwardHttp = (
  req: IncomingMessage,
  res: ServerResponse,
  origin: string,
  headers: Record<string, string>,
  answerHeaders: readonly string[],
  /**
   * Told the upstream's status once its answer's head arrives (before the client sees it), or
   * undefined when none came. A promise it returns holds the answer back until it settles, at most
   * ANSWER_HOLD_MS (an accepted broadcast's announcement to the other instances: see passthrough.ts).
   */
  onAnswer?: (status: number | undefined) => void | Promise<void>,
) => void;

/** The longest an answer is held for its onAnswer's promise (a Redis publish: well under a millisecond when Redis is up). */
export const ANSWER_HOLD_MS = 250;

/** Settles when `pending` does, or after `ms`, whichever comes first; never rejects. */
function settledWithin(pending: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    pending.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

export function createHttpForwarder(options: ForwardOptions): ForwardHttp {
  return (req, res, origin, headers, answerHeaders, onAnswer) => {
    const framing = requestBodyFraming(req.method ?? 'GET', req.headers);
    // Node reads a dropped body to find the next request on the connection; nothing of it goes on.
    if (framing.kind === 'none') req.resume();
    // `headers` were built for this request alone: the framing joins them in place.
    if (framing.kind === 'length') headers['content-length'] = framing.length;
    const deadline = abortAt(options.answerDeadlineMs);
    let answerBody: Readable | undefined;
    // 'close' follows every answer, sent or not. Once res.end() was called (the answer's body
    // ended, or an error was written) there is nothing left to stop; an Error built here
    // anyway (its stack captured, the abort run through undici) was the passthrough's largest
    // cost of its own per request.
    res.once('close', () => {
      if (res.writableEnded) return;
      deadline.abort(new ClientGone('the client connection closed'));
      answerBody?.destroy();
    });
    const started = process.hrtime.bigint();

    const fail = (error: UpstreamError): void => {
      deadline.cancel();
      onAnswer?.(undefined);
      onAnswer = undefined;
      if (deadline.signal.reason instanceof ClientGone) return;
      options.telemetry.passthroughFailed(origin, error);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // A client body the upstream did not read in full leaves the connection out of step: close it.
      if (!req.complete) res.shouldKeepAlive = false;
      sendError(res, failureReply(error.kind === 'timeout' ? 'timeout' : 'passthrough'), 'BYPASS', answerHeaders);
    };

    options.client
      .send({
        origin,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers,
        body: framing.kind === 'none' ? undefined : bodyOf(req),
        signal: deadline.signal,
      })
      .then((answer) => {
        const held = onAnswer?.(answer.status);
        onAnswer = undefined;
        if (held) void settledWithin(held, ANSWER_HOLD_MS).then(() => relay(answer));
        else relay(answer);
      }, fail);

    function relay(answer: Awaited<ReturnType<typeof options.client.send>>): void {
      // The client may have gone while the answer was held.
      if (res.destroyed) {
        answer.body.destroy();
        return;
      }
      if (!req.complete) res.shouldKeepAlive = false;
      const outgoing = clientResponseHeaders(answer.headers, res.shouldKeepAlive, [...answerHeaders, 'x-cache', 'BYPASS']);
      try {
        res.writeHead(answer.status, outgoing);
      } catch (error) {
        // A header Node will not write (it validates what undici parsed more strictly).
        answer.body.destroy();
        fail(classifyTransportError(error, origin));
        return;
      }
      options.telemetry.passthroughAnswered(origin, answer.status, Number(process.hrtime.bigint() - started) / 1e9);
      // Not pipeline(): a body that fails must be counted before the client connection is cut.
      const body = answer.body;
      answerBody = body;
      body.once('error', (error) => fail(classifyTransportError(deadline.signal.reason ?? error, origin)));
      // What pipe() does, with two listeners where it adds eight and takes them off again:
      // the client's pace sets the upstream's (undici stops reading its socket while paused).
      body.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) body.pause();
      });
      res.on('drain', () => body.resume());
      body.once('end', () => {
        deadline.cancel();
        res.end();
      });
    }
  };
}

/**
 * The client's body as a stream of its own, which undici may destroy when it stops early (an
 * early answer) without destroying the client's request, whose connection still carries that
 * answer. Fed from the request's 'data' as req.pipe(new PassThrough()) would be, without a
 * Transform's write side and pipe's listeners: the request pauses while undici has enough, and
 * once undici destroys the body it is left paused, unread (its connection closes after the
 * answer, fail() and the answer's head see to that). Not an async iterator: a body costs a
 * chunk copy, not a promise per chunk.
 */
function bodyOf(req: IncomingMessage): Readable {
  const onData = (chunk: Buffer): void => {
    if (!body.push(chunk)) req.pause();
  };
  const onEnd = (): void => {
    body.push(null);
  };
  const body = new Readable({
    read: () => {
      req.resume();
    },
    destroy: (error, callback) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      callback(error);
    },
  });
  req.on('data', onData);
  req.once('end', onEnd);
  return body;
}
