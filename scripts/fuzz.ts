/**
 * `npm run fuzz`: the fuzz properties of test/fuzz/requests.fuzz.test.ts for many more cases
 * (FUZZ_RUNS, default 100,000) against in-process proxies in front of fake upstreams, a few
 * lanes side by side (FUZZ_LANES, default 4: one request in flight per lane, so each upstream
 * request is known to belong to its case). It keeps going after a failure, treating failures
 * already found as known, so one run lists every distinct failure, each shrunk by fast-check;
 * it stops by itself after FUZZ_MAX_SECONDS (default 900) and exits 1 if anything failed.
 *
 *   FUZZ_SEED=<n>                the run's seed (random by default, always printed)
 *   FUZZ_SEED=<n> FUZZ_PATH=<p>  replays one counterexample, as printed with each failure
 */
import fc from 'fast-check';
import { fuzzRequest, type FuzzRequest } from '../testkit/fuzz/arbitraries.js';
import { startFuzzLane, type CaseReport, type FuzzLane } from '../testkit/fuzz/lane.js';
import { abbreviate, describeCase, judgeCase, type Violation } from '../testkit/fuzz/properties.js';

function intSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

const RUNS = intSetting('FUZZ_RUNS', 100_000);
const SEED = intSetting('FUZZ_SEED', Math.floor(Math.random() * 2 ** 31));
const LANES = Math.max(1, intSetting('FUZZ_LANES', 4));
const MAX_SECONDS = intSetting('FUZZ_MAX_SECONDS', 900);
const REPLAY_PATH = process.env.FUZZ_PATH;
const PROGRESS_EVERY_MS = 5_000;

/** Thrown by the property so fast-check shrinks the case; carries what was found. */
class CaseFailure extends Error {
  constructor(
    readonly report: CaseReport,
    readonly violations: Violation[],
  ) {
    super(describeCase(report, violations));
  }
}

interface Finding {
  violation: Violation;
  counterexample: FuzzRequest;
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

function propertyFor(lane: FuzzLane, state: RunState, skipKnown: boolean) {
  return fc.asyncProperty(fuzzRequest(), async (request) => {
    if (!state.shrinking) {
      cases++;
      state.cases++;
    }
    requests++;
    const report = await lane.run(request);
    const fresh = judgeCase(report).filter((v) => !skipKnown || !findings.has(v.signature));
    if (fresh.length > 0) {
      state.shrinking = true;
      throw new CaseFailure(report, fresh);
    }
  });
}

function record(result: fc.RunDetails<[FuzzRequest]>, seed: number): void {
  const error = result.errorInstance;
  if (!result.failed || !(error instanceof CaseFailure) || !result.counterexample) return;
  for (const violation of error.violations) {
    const earlier = findings.get(violation.signature);
    const finding = { violation, counterexample: result.counterexample[0], description: error.message, seed, path: result.counterexamplePath ?? '', shrinks: result.numShrinks };
    if (!earlier || finding.counterexample.target.length < earlier.counterexample.target.length) findings.set(violation.signature, finding);
    if (!earlier) write(`  found: ${violation.signature}`);
  }
}

async function runLane(index: number, budget: number): Promise<void> {
  const lane = await startFuzzLane();
  try {
    let remaining = budget;
    for (let attempt = 0; remaining > 0 && performance.now() < deadline; attempt++) {
      // Each property run after a failure starts from a new seed derived from the run's seed.
      const seed = (SEED + index * 7_919 + attempt * 104_729) | 0;
      const state: RunState = { shrinking: false, cases: 0 };
      const result = await fc.check(propertyFor(lane, state, true), {
        seed,
        numRuns: remaining,
        interruptAfterTimeLimit: Math.max(1, deadline - performance.now()),
      });
      remaining -= Math.max(1, state.cases);
      record(result, seed);
      if (!result.failed) break;
    }
  } finally {
    await lane.close();
  }
}

async function replay(seed: number, path: string): Promise<void> {
  const lane = await startFuzzLane();
  try {
    const result = await fc.check(propertyFor(lane, { shrinking: false, cases: 0 }, false), { seed, path, numRuns: 1, endOnFailure: true });
    record(result, seed);
    if (!result.failed) write(`replay: seed ${seed} path ${path} passes now`);
  } finally {
    await lane.close();
  }
}

function report(): number {
  const seconds = (performance.now() - startedAt) / 1_000;
  write('');
  write(`fuzz: ${cases} cases (${requests} requests with shrinking) in ${seconds.toFixed(1)} s, ${LANES} lanes, seed ${SEED}`);
  if (!REPLAY_PATH && cases < RUNS) write(`fuzz: stopped at the time limit (FUZZ_MAX_SECONDS=${MAX_SECONDS}) before ${RUNS} cases`);
  if (findings.size === 0) {
    write('fuzz: no failures');
    return 0;
  }
  write(`fuzz: ${findings.size} distinct failure(s):`);
  const sorted = [...findings.values()].sort((a, b) => a.violation.signature.localeCompare(b.violation.signature));
  for (const [number, finding] of sorted.entries()) {
    write('');
    write(`${number + 1}. ${finding.violation.signature}`);
    write(`   counterexample (shrunk ${finding.shrinks} times): ${finding.counterexample.method} ${abbreviate(JSON.stringify(finding.counterexample.target))}`);
    write(`   ${finding.violation.detail}`);
    write(`   replay: FUZZ_SEED=${finding.seed} FUZZ_PATH=${finding.path} npm run fuzz`);
  }
  write('');
  write(`reproduce the run: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} FUZZ_LANES=${LANES} npm run fuzz`);
  return 1;
}

async function main(): Promise<number> {
  if (REPLAY_PATH) {
    write(`fuzz: replaying seed ${SEED} path ${REPLAY_PATH}`);
    await replay(SEED, REPLAY_PATH);
    return report();
  }
  write(`fuzz: ${RUNS} cases, ${LANES} lanes, seed ${SEED}, at most ${MAX_SECONDS} s`);
  const progress = setInterval(() => {
    const seconds = (performance.now() - startedAt) / 1_000;
    write(`  ${cases}/${RUNS} cases, ${findings.size} distinct failures, ${Math.round(cases / seconds)} cases/s`);
  }, PROGRESS_EVERY_MS);
  progress.unref();
  const perLane = Math.ceil(RUNS / LANES);
  await Promise.all(Array.from({ length: LANES }, (_, index) => runLane(index, Math.max(0, Math.min(perLane, RUNS - index * perLane)))));
  clearInterval(progress);
  return report();
}

process.exitCode = await main();
