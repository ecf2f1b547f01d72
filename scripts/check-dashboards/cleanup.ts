/** Bounded clean-up: nothing the check started may outlive it, and no step may hang it. */
import { setTimeout as sleep } from 'node:timers/promises';

const CLEANUP_STEP_LIMIT_MS = 10_000;

/** Clean-up steps, run last-registered first, each bounded; runs once however often it is called. */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  private running: Promise<void> | undefined;

  add(name: string, run: () => Promise<unknown>): void {
    this.steps.push({ name, run });
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of [...this.steps].reverse()) {
        const outcome = await Promise.race([
          step.run().then(
            () => 'done',
            (error: unknown) => `failed: ${(error as Error).message}`,
          ),
          sleep(CLEANUP_STEP_LIMIT_MS).then(() => 'timed out'),
        ]);
        if (outcome !== 'done') process.stderr.write(`clean-up: ${step.name} ${outcome}\n`);
      }
    })();
    return this.running;
  }
}
