/**
 * The proxy's one ordered stop. Each part is entered, as soon as it exists, under the step in
 * which it stops; `run()` then stops exactly what was built, so a start-up that fails part-way
 * (a port taken, a constructor that throws) releases the tip tracker, the Redis connections,
 * the upstream pools and the live links it had opened, in the same order as a normal stop.
 * Steps run in order; the stops of one step run together. A failing stop does not keep the rest
 * from running: the first failure is thrown once every step has run.
 */

/** The steps, in the order they run. */
export const STOP_STEPS = [
  /** New work is refused: readiness says "shutting down", the warm-up stops. */
  'refuse',
  /** Fanned-out clients get their close frame (1001) or Socket.IO disconnect before sockets end. */
  'farewell',
  /** Listeners stop accepting (their drain is awaited under 'drained'); the push feed closes, so no notification starts a poll. */
  'stop-accepting',
  /** The tip tracker, the Redis change notifier, the mempool watcher. */
  'pollers',
  /** In-flight requests have finished (within server.shutdownGraceMs). */
  'drained',
  /** Redis pub/sub channels (purges, activity). */
  'channels',
  /** Cache tiers and the rate-limit budget (their Redis connections). */
  'stores',
  /** The JSON-RPC links and the HTTP pools to the upstreams. */
  'connections',
] as const;

export type StopStep = (typeof STOP_STEPS)[number];

type Stop = () => unknown;

export class StopSequence {
  private readonly stops = new Map<StopStep, Stop[]>();
  private running: Promise<void> | undefined;

  /** Enters `stop` under `step`. Entered after run() began, it is not run: enter parts as they are built. */
  add(step: StopStep, stop: Stop): void {
    const list = this.stops.get(step) ?? [];
    list.push(stop);
    this.stops.set(step, list);
  }

  /** Runs every step once; later calls get the same promise. */
  run(): Promise<void> {
    this.running ??= this.runSteps();
    return this.running;
  }

  private async runSteps(): Promise<void> {
    let firstFailure: { error: unknown } | undefined;
    for (const step of STOP_STEPS) {
      const outcomes = await Promise.allSettled((this.stops.get(step) ?? []).map((stop) => Promise.resolve().then(stop)));
      for (const outcome of outcomes) if (outcome.status === 'rejected') firstFailure ??= { error: outcome.reason };
    }
    if (firstFailure) throw firstFailure.error;
  }
}
