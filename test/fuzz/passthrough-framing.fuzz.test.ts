/**
 * The passthrough's framing under fuzzing (issue 14): pipelined client requests with any
 * method, Connection tokens and bodies (testkit/fuzz/passthrough-framing.ts) go through the real
 * proxy to an upstream that parses every request itself, and the upstream must parse exactly
 * the requests the clients sent, each client getting its own answer. Seeded and bounded so
 * `npm test` stays fast; `npm run fuzz` runs the same property for many more cases. The judge
 * is checked on known-bad reports too, so that the property can fail.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFramingLane, type FramingLane } from '../../testkit/fuzz/framing-lane.js';
import {
  describeFramingCase,
  framingCase,
  judgeFramingCase,
  requestLine,
  type FramingCase,
  type FramingReport,
} from '../../testkit/fuzz/passthrough-framing.js';

const SEED = 20_261_125;
const RUNS = 150;

let lane: FramingLane;
beforeAll(async () => {
  lane = await startFramingLane();
});
afterAll(async () => {
  await lane?.close();
});

const SMUGGLING_GET: FramingCase = {
  messages: [
    { method: 'GET', path: '/v2/info', connection: ['keep-alive', 'content-length'], body: { kind: 'length', bytes: 'GET /x HTTP/1.1\r\nHost: u\r\n\r\n' } },
  ],
};
const answer = (body: string): string => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const OWN_ANSWER = answer(JSON.stringify({ method: 'GET', target: '/v2/info', bodyBytes: 0 }));

describe('the passthrough framing judge', () => {
  it('passes the one request, answered', () => {
    const report: FramingReport = {
      case: SMUGGLING_GET,
      parsed: [requestLine('GET', '/v2/info', '')],
      unparsed: [],
      received: { kind: 'closed', bytes: OWN_ANSWER },
    };
    expect(judgeFramingCase(report)).toEqual([]);
  });

  it('flags a smuggled request, a body forwarded on a GET, and an answer meant for another request', () => {
    const smuggled: FramingReport = {
      case: SMUGGLING_GET,
      parsed: [requestLine('GET', '/v2/info', ''), requestLine('GET', '/x', '')],
      unparsed: [],
      received: { kind: 'closed', bytes: OWN_ANSWER },
    };
    expect(judgeFramingCase(smuggled).map((v) => v.signature)).toEqual(['framing:extra-request']);
    const withBody = { ...smuggled, parsed: [requestLine('GET', '/v2/info', 'GET /x HTTP/1.1\r\nHost: u\r\n\r\n')] };
    expect(judgeFramingCase(withBody).map((v) => v.signature)).toEqual(['framing:extra-request']);
    const shifted = {
      ...smuggled,
      parsed: [requestLine('GET', '/v2/info', '')],
      received: { kind: 'closed' as const, bytes: answer(JSON.stringify({ method: 'GET', target: '/x', bodyBytes: 0 })) },
    };
    expect(judgeFramingCase(shifted).map((v) => v.signature)).toEqual(['answers:passthrough-framing:wrong-answer']);
  });
});

describe('passthrough framing over real sockets', () => {
  it(`the upstream parses exactly the requests the clients sent, each answered in turn (${RUNS} runs, seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(framingCase(), async (framing) => {
        const report = await lane.run(framing);
        const violations = judgeFramingCase(report);
        if (violations.length > 0) throw new Error(describeFramingCase(report, violations));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 300_000);
});
