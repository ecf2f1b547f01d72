/**
 * Reads a request body the client announced with a Content-Length no larger than a bound (the
 * caller checked both). Node delivers at most that many bytes, and the server's own timeouts
 * (server.requestTimeoutMs, headers and body) bound how long it may take. Undefined when the
 * client went away or the body is not what it announced.
 */
import type { IncomingMessage } from 'node:http';

export function readAnnouncedBody(req: IncomingMessage, length: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const body = Buffer.allocUnsafe(length);
    let received = 0;
    let settled = false;
    const finish = (value: Buffer | undefined): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('aborted', onFail);
      req.off('close', onClose);
      resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      if (received + chunk.length > length) {
        finish(undefined);
        return;
      }
      chunk.copy(body, received);
      received += chunk.length;
    };
    const onEnd = (): void => finish(received === length ? body : undefined);
    const onFail = (): void => finish(undefined);
    // 'close' after 'end' is the normal order; before it, the client went away.
    const onClose = (): void => finish(req.readableEnded && received === length ? body : undefined);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onFail);
    req.on('aborted', onFail);
    req.on('close', onClose);
  });
}
