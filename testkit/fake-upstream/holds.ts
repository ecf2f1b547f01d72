/**
 * Answers held back until the test lets them go: a test proves that nobody waits for an upstream
 * request by answering clients while that request is still unanswered (an event, not a timing).
 */
import type { RecordedRequest } from './types.js';

/** Held answers of the requests a `hold` matched. */
export interface HeldAnswers {
  /** Requests received and not answered yet. */
  readonly waiting: number;
  /** Answers the held requests (and later matching ones at once, as usual). */
  release(): void;
}

export class Hold implements HeldAnswers {
  private readonly queued: (() => void)[] = [];
  private released = false;

  constructor(
    readonly matches: (request: RecordedRequest) => boolean,
    private readonly onRelease: (hold: Hold) => void,
  ) {}

  get waiting(): number {
    return this.queued.length;
  }

  /** Runs `answer` now when released, else when released. */
  take(answer: () => void): void {
    if (this.released) answer();
    else this.queued.push(answer);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
    for (const answer of this.queued.splice(0)) answer();
  }

  /** Drops the held answers unanswered (the server is closing and destroys their sockets). */
  drop(): void {
    this.released = true;
    this.queued.length = 0;
  }
}
