/**
 * Sends one request with its target exactly as given (fetch() would normalise `..`, `\` and
 * `%2e` away before the proxy saw them), over kept-alive connections, and gives up after a
 * deadline. Used by the fuzz lanes.
 */
import { Agent, request } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type RawOutcome = { kind: 'answer'; answer: RawAnswer; ms: number } | { kind: 'no-answer'; error: string; ms: number };

export interface RawClient {
  send(origin: string, method: string, target: string, deadlineMs: number): Promise<RawOutcome>;
  close(): void;
}

export function createRawClient(connections: number): RawClient {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const send = (origin: string, method: string, target: string, deadlineMs: number): Promise<RawOutcome> => {
    const { hostname, port } = new URL(origin);
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: RawOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const req = request({ agent, hostname, port, method, path: target }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          settle({ kind: 'answer', answer: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }, ms: elapsed() }),
        );
        res.on('error', (error) => settle({ kind: 'no-answer', error: `response broke off: ${error.message}`, ms: elapsed() }));
      });
      const timer = setTimeout(() => {
        settle({ kind: 'no-answer', error: `no answer within ${deadlineMs} ms`, ms: elapsed() });
        req.destroy();
      }, deadlineMs);
      req.on('error', (error: NodeJS.ErrnoException) => settle({ kind: 'no-answer', error: `${error.code ?? 'error'}: ${error.message}`, ms: elapsed() }));
      req.end();
    });
  };
  return { send, close: () => agent.destroy() };
}
