/**
 * Property-based fuzzing over real HTTP (issue 8, "Tests"): hostile request targets built from
 * the 13 route templates (testkit/fuzz/arbitraries.ts) go, byte for byte, to the real proxy in
 * front of the fake upstream, and for every one (testkit/fuzz/properties.ts) the proxy answers
 * within its timeout, makes no 5xx of its own, and sends the upstream nothing but canonical
 * route requests and clean passthrough paths. Seeded and bounded so `npm test` stays fast;
 * `npm run fuzz` runs the same properties for 100,000 cases and more.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fuzzRequest } from '../../testkit/fuzz/arbitraries.js';
import { startFuzzLane, type FuzzLane } from '../../testkit/fuzz/lane.js';
import { describeCase, judgeCase } from '../../testkit/fuzz/properties.js';

// Fixed, so a failure is the same on every machine; fast-check prints it with the shrunk counterexample.
const SEED = 20_260_808;
const RUNS = 300;

let lane: FuzzLane;
beforeAll(async () => {
  lane = await startFuzzLane();
});
afterAll(async () => {
  await lane?.close();
});

describe('hostile requests over real HTTP', () => {
  it(`keep the proxy answering, free of 5xx of its own, and the upstream asked only canonical or public paths (${RUNS} runs, seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fuzzRequest(), async (request) => {
        const report = await lane.run(request);
        const violations = judgeCase(report);
        if (violations.length > 0) throw new Error(describeCase(report, violations));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 300_000);
});
