/** Injected delays and failures: which requests they hit, and how a failure answers. */
import { STATUS_CODES } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { assertCount } from './primitives.js';
import { errorBody, JSON_TYPE } from './replies.js';
import { API_VERSION, write } from './respond.js';
import type { FailureMode } from './types.js';

/** What 'garbage' answers: declared JSON, but cut short. */
const GARBAGE_BODY = '{"limit":20,"offset":0,"results":[{"tx_id":"0x';

export class FaultPlan {
  private delay: { ms: number; match?: RegExp } | undefined;
  private readonly once: { how: FailureMode; match?: RegExp; remaining: number }[] = [];
  private always: { how: FailureMode; match?: RegExp } | undefined;

  setDelay(ms: number, match?: RegExp): void {
    this.delay = ms > 0 ? { ms, match } : undefined;
  }

  failNext(n: number, how: FailureMode, match?: RegExp): void {
    assertCount(n, 0, 'failNext(n)');
    if (n > 0) this.once.push({ how, match, remaining: n });
  }

  setFailing(how: FailureMode | null, match?: RegExp): void {
    this.always = how === null ? undefined : { how, match };
  }

  delayFor(url: string): number {
    return this.delay && matches(this.delay.match, url) ? this.delay.ms : 0;
  }

  /** The failure for this request, if any; uses up one failNext credit. */
  take(url: string): FailureMode | undefined {
    const rule = this.once.find((r) => matches(r.match, url));
    if (rule) {
      rule.remaining -= 1;
      if (rule.remaining === 0) this.once.splice(this.once.indexOf(rule), 1);
      return rule.how;
    }
    return this.always && matches(this.always.match, url) ? this.always.how : undefined;
  }
}

// How much more of a request body a `close` failure reads before it drops the connection: by
// then the client has read the answer (a server that reset at once could make the client's
// kernel drop the unread answer, which no client can help).
const CLOSE_AFTER_BYTES = 1024 * 1024;

function dropAfterReading(req: IncomingMessage, bytes: number): void {
  let read = 0;
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read >= bytes) req.socket.destroy();
  });
  req.once('end', () => req.socket.destroy());
}

export function matches(pattern: RegExp | undefined, url: string): boolean {
  if (!pattern) return true;
  pattern.lastIndex = 0; // a /g or /y pattern would otherwise resume from its previous match
  return pattern.test(url);
}

/** A fault answered by dispatch (the other resource's answer), not here. */
export const isWrongResource = (how: FailureMode): how is { answerAs: string } => typeof how === 'object' && 'answerAs' in how;

export function fail(req: IncomingMessage, res: ServerResponse, how: Exclude<FailureMode, { answerAs: string }>): void {
  if (how === 'hang') return; // close() destroys the socket
  if (how === 'reset') {
    req.socket.destroy();
    return;
  }
  const headers = { 'content-type': JSON_TYPE, 'x-api-version': API_VERSION, 'cache-control': 'no-store' };
  if (how === 'stall-body') {
    // Promises a whole body, sends its first bytes, then stalls (close() destroys the socket).
    res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(GARBAGE_BODY) * 2 });
    res.write(GARBAGE_BODY);
    return;
  }
  if (how === 'garbage') write(res, 200, headers, GARBAGE_BODY);
  else if (how.close) {
    write(res, how.status, { ...headers, ...how.headers }, how.body ?? errorBody(how.status, 'Injected failure'));
    dropAfterReading(req, CLOSE_AFTER_BYTES);
  } else write(res, how.status, { ...headers, ...how.headers }, how.body ?? errorBody(how.status, 'Injected failure'));
}

export function refuseUpgrade(socket: Duplex, how: FailureMode): void {
  if (how === 'hang' || how === 'stall-body') return;
  if (how === 'reset') {
    socket.destroy();
    return;
  }
  if (how === 'garbage') socket.end(GARBAGE_BODY);
  else if (isWrongResource(how)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  else socket.end(`HTTP/1.1 ${how.status} ${STATUS_CODES[how.status] ?? ''}\r\nConnection: close\r\n\r\n`);
}
