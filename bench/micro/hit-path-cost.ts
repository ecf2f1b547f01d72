/**
 * What the proxy's own JavaScript costs one memory hit, without node:http and the kernel: the
 * public pipeline (createProxyCore's `handle`, the code a hit runs from the request's URL to
 * `res.end`) called in a loop with a request and a response that only record what they are
 * given, against a bare handler doing the baseline's work (a Map lookup, writeHead, end) on the
 * same objects. The memory-hit scenario puts it beside a hit's CPU per request: the rest of a
 * hit is node:http (parsing, the head, the write) and the kernel, which both servers pay.
 * Printed as one JSON line (ns per hit).
 * Needs a fake upstream (UPSTREAM_URL) for the one miss that fills the entry.
 *   UPSTREAM_URL=http://... HIT_PATH=/extended/v1/tx/0x... node dist/bench/micro/hit-path-cost.js
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino } from 'pino';
import { createProxyCore } from '../../src/composition-root.js';
import { testConfig } from '../../testkit/proxy-config.js';

const ITERATIONS = Number(process.env.ITERATIONS ?? 200_000);
const ROUNDS = 7;
const upstreamUrl = process.env.UPSTREAM_URL ?? '';
const hitPath = process.env.HIT_PATH ?? '';

/** The parts of a response the proxy's hit path touches. */
class RecordingResponse extends EventEmitter {
  statusCode = 200;
  writableEnded = false;
  headers: unknown = undefined;
  body: unknown = undefined;
  writeHead(status: number, headers: unknown): this {
    this.statusCode = status;
    this.headers = headers;
    return this;
  }
  end(body?: unknown): this {
    this.body = body;
    this.writableEnded = true;
    return this;
  }
}

const socket = { remoteAddress: '127.0.0.1' };
function request(url: string): IncomingMessage {
  // As node:http hands it over: a fresh object per request with its raw headers (wrk's one).
  return { url, method: 'GET', rawHeaders: ['Host', '127.0.0.1'], headers: { host: '127.0.0.1' }, socket } as unknown as IncomingMessage;
}

const core = await createProxyCore(
  testConfig({ upstreamUrls: [upstreamUrl], overrides: { logLevel: 'info' } }),
  // The defaults' access log (one hit in 100 logged), written nowhere: the line's cost stays in.
  { logger: pino({ level: 'info' }, { write: () => undefined }), defaultMetrics: false },
);
await core.tracker.pollOnce();
// The one miss that fills the entry, then confirm hits.
await new Promise<void>((resolve) => {
  const res = new RecordingResponse();
  res.end = function (this: RecordingResponse, body?: unknown) {
    RecordingResponse.prototype.end.call(this, body);
    resolve();
    return this;
  } as RecordingResponse['end'];
  core.handle(request(hitPath), res as unknown as ServerResponse);
});

const bareAnswers = new Map<string, Buffer>([[hitPath, Buffer.alloc(2400)]]);
const bareHead = ['content-type', 'application/json; charset=utf-8', 'content-length', '2400'];
const bare = (req: IncomingMessage, res: ServerResponse): void => {
  res.writeHead(200, bareHead);
  res.end(bareAnswers.get(req.url as string));
};

function time(handle: (req: IncomingMessage, res: ServerResponse) => void): number {
  let hits = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) {
    const res = new RecordingResponse();
    handle(request(hitPath), res as unknown as ServerResponse);
    if (res.writableEnded) hits++;
  }
  const ns = Number(process.hrtime.bigint() - started) / ITERATIONS;
  if (hits !== ITERATIONS) throw new Error(`only ${hits} of ${ITERATIONS} answered synchronously: not a hit`);
  return ns;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const proxy: number[] = [];
const baseline: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  proxy.push(time(core.handle));
  baseline.push(time(bare));
}
await core.close();
console.log(
  JSON.stringify({
    nsPerHit: median(proxy),
    nsPerBareHit: median(baseline),
  }),
);
