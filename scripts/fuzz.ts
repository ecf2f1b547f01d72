/**
 * `npm run fuzz`: the fuzz properties of test/fuzz/requests.fuzz.test.ts for many more cases
 * (FUZZ_RUNS, default 100,000) against in-process proxies in front of fake upstreams, a few
 * lanes side by side (FUZZ_LANES, default 4: one request in flight per lane, so each upstream
 * request is known to belong to its case), and beside them the passthrough framing lane of
 * test/fuzz/passthrough-framing.fuzz.test.ts (FUZZ_PASSTHROUGH_RUNS cases, default 10,000: the
 * upstream parses exactly the requests the clients sent). It keeps going after a failure,
 * treating failures already found as known, so one run lists every distinct failure, each
 * shrunk by fast-check; it stops by itself after FUZZ_MAX_SECONDS (default 900) and exits 1 if
 * anything failed.
 *
 *   FUZZ_SEED=<n>                the run's seed (random by default, always printed)
 *   FUZZ_SEED=<n> FUZZ_PATH=<p>  replays one counterexample, as printed with each failure
 *                                (with FUZZ_LANE=passthrough for the passthrough lane's)
 */
import fc from 'fast-check';
import { fuzzRequest, type FuzzRequest } from '../testkit/fuzz/arbitraries.js';
import { startFramingLane, type FramingLane } from '../testkit/fuzz/framing-lane.js';
import { startFuzzLane, type FuzzLane } from '../testkit/fuzz/lane.js';
import { describeFramingCase, judgeFramingCase, framingCase, wireBytes, type FramingCase } from '../testkit/fuzz/passthrough-framing.js';
import { abbreviate, describeCase, judgeCase, type Violation } from '../testkit/fuzz/properties.js';

function intSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

const RUNS = intSetting('FUZZ_RUNS', 100_000);
const PASSTHROUGH_RUNS = intSetting('FUZZ_PASSTHROUGH_RUNS', 10_000);
const SEED = intSetting('FUZZ_SEED', Math.floor(Math.random() * 2 ** 31));
const LANES = Math.max(1, intSetting('FUZZ_LANES', 4));
const MAX_SECONDS = intSetting('FUZZ_MAX_SECONDS', 900);
const REPLAY_PATH = process.env.FUZZ_PATH;
const REPLAY_PASSTHROUGH = process.env.FUZZ_LANE === 'passthrough';
const PROGRESS_EVERY_MS = 5_000;

/** Thrown by the property so fast-check shrinks the case; carries what was found. */
class CaseFailure extends Error {
  constructor(
    description: string,
    readonly violations: Violation[],
  ) {
    super(description);
  }
}

interface Finding {
  violation: Violation;
  /** The shrunk counterexample in one line, and its size (the shortest is kept). */
  counterexample: string;
  size: number;
  /** `passthrough` for the framing lane's (replayed with FUZZ_LANE=passthrough). */
  lane: 'requests' | 'passthrough';
  description: string;
  seed: number;
  path: string;
  shrinks: number;
}

const startedAt = performance.now();
const deadline = startedAt + MAX_SECONDS * 1_000;
const findings = new Map<string, Finding>();
let cases = 0;
let requests = 0;

const write = (line: string) => process.stdout.write(`${line}\n`);

/** One property run of a lane; failures already in `findings` count as passes (when `skipKnown`). */
interface RunState {
  shrinking: boolean;
  /** Cases generated in this property run (shrinking steps are not cases). */
  cases: number;
}

/** Judges one case; failures already in `findings` count as passes (when `skipKnown`). */
function checked(state: RunState, skipKnown: boolean, violations: Violation[], describe: () => string): void {
  const fresh = violations.filter((v) => !skipKnown || !findings.has(v.signature));
  if (fresh.length > 0) {
    state.shrinking = true;
    throw new CaseFailure(describe(), fresh);
  }
}

function countCase(state: RunState): void {
  if (!state.shrinking) {
    cases++;
    state.cases++;
  }
  requests++;
}

function propertyFor(lane: FuzzLane, state: RunState, skipKnown: boolean) {
  return fc.asyncProperty(fuzzRequest(), async (request) => {
    countCase(state);
    const report = await lane.run(request);
    const violations = judgeCase(report);
    checked(state, skipKnown, violations, () => describeCase(report, violations));
  });
}

function passthroughPropertyFor(lane: FramingLane, state: RunState, skipKnown: boolean) {
  return fc.asyncProperty(framingCase(), async (framing) => {
    countCase(state);
    const report = await lane.run(framing);
    const violations = judgeFramingCase(report);
    checked(state, skipKnown, violations, () => describeFramingCase(report, violations));
  });
}

const requestSummary = (request: FuzzRequest) => ({
  counterexample: `${request.method} ${abbreviate(JSON.stringify(request.target))}`,
  size: request.target.length,
});
const framingSummary = (framing: FramingCase) => {
  const bytes = wireBytes(framing);
  return { counterexample: abbreviate(JSON.stringify(bytes), 600), size: bytes.length };
};

function record<T>(result: fc.RunDetails<[T]>, seed: number, lane: Finding['lane'], summary: (value: T) => { counterexample: string; size: number }): void {
  const error = result.errorInstance;
  if (!result.failed || !(error instanceof CaseFailure) || !result.counterexample) return;
  for (const violation of error.violations) {
    const earlier = findings.get(violation.signature);
    const finding: Finding = {
      violation,
      ...summary(result.counterexample[0]),
      lane,
      description: error.message,
      seed,
      path: result.counterexamplePath ?? '',
      shrinks: result.numShrinks,
    };
    if (!earlier || finding.size < earlier.size) findings.set(violation.signature, finding);
    if (!earlier) write(`  found: ${violation.signature}`);
  }
}

/** A kind of lane: how to start one, its property, and how a counterexample is summed up. */
interface LaneKind<Lane extends { close(): Promise<void> }, Case> {
  name: Finding['lane'];
  start: () => Promise<Lane>;
  property: (lane: Lane, state: RunState, skipKnown: boolean) => fc.IAsyncPropertyWithHooks<[Case]>;
  summary: (value: Case) => { counterexample: string; size: number };
}

const REQUEST_LANES: LaneKind<FuzzLane, FuzzRequest> = { name: 'requests', start: startFuzzLane, property: propertyFor, summary: requestSummary };
const PASSTHROUGH_LANE: LaneKind<FramingLane, FramingCase> = {
  name: 'passthrough',
  start: startFramingLane,
  property: passthroughPropertyFor,
  summary: framingSummary,
};

async function runLane<Lane extends { close(): Promise<void> }, Case>(kind: LaneKind<Lane, Case>, seedOffset: number, budget: number): Promise<void> {
  if (budget <= 0) return;
  const lane = await kind.start();
  try {
    let remaining = budget;
    for (let attempt = 0; remaining > 0 && performance.now() < deadline; attempt++) {
      // Each property run after a failure starts from a new seed derived from the run's seed.
      const seed = (SEED + seedOffset + attempt * 104_729) | 0;
      const state: RunState = { shrinking: false, cases: 0 };
      const result = await fc.check(kind.property(lane, state, true), {
        seed,
        numRuns: remaining,
        interruptAfterTimeLimit: Math.max(1, deadline - performance.now()),
      });
      remaining -= Math.max(1, state.cases);
      record(result, seed, kind.name, kind.summary);
      if (!result.failed) break;
    }
  } finally {
    await lane.close();
  }
}

async function replay<Lane extends { close(): Promise<void> }, Case>(kind: LaneKind<Lane, Case>, seed: number, path: string): Promise<void> {
  const lane = await kind.start();
  try {
    const result = await fc.check(kind.property(lane, { shrinking: false, cases: 0 }, false), { seed, path, numRuns: 1, endOnFailure: true });
    record(result, seed, kind.name, kind.summary);
    if (!result.failed) write(`replay: seed ${seed} path ${path} passes now`);
  } finally {
    await lane.close();
  }
}

function report(): number {
  const seconds = (performance.now() - startedAt) / 1_000;
  write('');
  write(`fuzz: ${cases} cases (${requests} requests with shrinking) in ${seconds.toFixed(1)} s, ${LANES} lanes and the passthrough lane, seed ${SEED}`);
  if (!REPLAY_PATH && cases < RUNS + PASSTHROUGH_RUNS)
    write(`fuzz: stopped at the time limit (FUZZ_MAX_SECONDS=${MAX_SECONDS}) before ${RUNS + PASSTHROUGH_RUNS} cases`);
  if (findings.size === 0) {
    write('fuzz: no failures');
    return 0;
  }
  write(`fuzz: ${findings.size} distinct failure(s):`);
  const sorted = [...findings.values()].sort((a, b) => a.violation.signature.localeCompare(b.violation.signature));
  for (const [number, finding] of sorted.entries()) {
    write('');
    write(`${number + 1}. ${finding.violation.signature}`);
    write(`   counterexample (shrunk ${finding.shrinks} times): ${finding.counterexample}`);
    write(`   ${finding.violation.detail}`);
    write(`   replay: ${finding.lane === 'passthrough' ? 'FUZZ_LANE=passthrough ' : ''}FUZZ_SEED=${finding.seed} FUZZ_PATH=${finding.path} npm run fuzz`);
  }
  write('');
  write(`reproduce the run: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} FUZZ_PASSTHROUGH_RUNS=${PASSTHROUGH_RUNS} FUZZ_LANES=${LANES} npm run fuzz`);
  return 1;
}

async function main(): Promise<number> {
  if (REPLAY_PATH) {
    write(`fuzz: replaying seed ${SEED} path ${REPLAY_PATH}`);
    await (REPLAY_PASSTHROUGH ? replay(PASSTHROUGH_LANE, SEED, REPLAY_PATH) : replay(REQUEST_LANES, SEED, REPLAY_PATH));
    return report();
  }
  write(`fuzz: ${RUNS} cases, ${LANES} lanes, ${PASSTHROUGH_RUNS} passthrough framing cases, seed ${SEED}, at most ${MAX_SECONDS} s`);
  const progress = setInterval(() => {
    const seconds = (performance.now() - startedAt) / 1_000;
    write(`  ${cases}/${RUNS + PASSTHROUGH_RUNS} cases, ${findings.size} distinct failures, ${Math.round(cases / seconds)} cases/s`);
  }, PROGRESS_EVERY_MS);
  progress.unref();
  const perLane = Math.ceil(RUNS / LANES);
  await Promise.all([
    ...Array.from({ length: LANES }, (_, index) => runLane(REQUEST_LANES, index * 7_919, Math.max(0, Math.min(perLane, RUNS - index * perLane)))),
    runLane(PASSTHROUGH_LANE, 15_485_863, PASSTHROUGH_RUNS),
  ]);
  clearInterval(progress);
  return report();
}

process.exitCode = await main();
