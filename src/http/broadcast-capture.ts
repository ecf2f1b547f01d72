/**
 * The copies of POST /v2/transactions bodies the passthrough keeps to decode once the upstream
 * answers (broadcast-aware invalidation, issue 15), under ONE process-wide byte budget: each
 * unfinished broadcast may hold up to MAX_BROADCAST_BODY_BYTES (about 4.26 MB), and without a
 * bound a few dozen slow clients would make the proxy hold hundreds of megabytes. Beyond the
 * budget a body streams on to the upstream uncaptured (every byte still goes), and the broadcast
 * counts as undecodable (the activity registry then treats every principal as changed).
 *
 * One copy: with a Content-Length the whole body is reserved at its start and written into one
 * buffer as it streams (no list of chunks, no second copy at the end); without one (chunked), the
 * chunks are charged as they come and joined once at the end.
 */
import type { IncomingMessage } from 'node:http';

/** Bytes held for captures in this process, at most `limitBytes`. */
export class CaptureBudget {
  /** Bytes held now. */
  held = 0;
  /** The most ever held at once (for tests and the admin view). */
  peak = 0;
  /** Captures given up because the budget was spent. */
  overBudget = 0;

  constructor(readonly limitBytes: number) {}

  /** Takes `bytes` if they fit; false (nothing taken) otherwise. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limitBytes) return false;
    this.held += bytes;
    if (this.held > this.peak) this.peak = this.held;
    return true;
  }

  give(bytes: number): void {
    this.held -= bytes;
  }
}

/**
 * Captures the body of `req` as it streams to the upstream: a 'data' listener added after the
 * forwarder's own in the same turn (both see every chunk) that neither pauses nor changes what
 * goes on. `done` gets the whole body at its end, or undefined when it is over `maxBytes`, over
 * the budget, or never ends. What it held goes back to the budget once, whatever happens.
 */
export function captureBody(
  req: IncomingMessage,
  maxBytes: number,
  budget: CaptureBudget,
  done: (body: Buffer | undefined) => void,
  onOverBudget: () => void,
): void {
  let charged = 0;
  let dropped = false;
  const declared = declaredLength(req);
  let whole: Buffer | undefined;
  const chunks: Buffer[] = [];
  let bytes = 0;

  const giveBack = (): void => {
    budget.give(charged);
    charged = 0;
  };
  const drop = (overBudget: boolean): void => {
    dropped = true;
    whole = undefined;
    chunks.length = 0;
    req.off('data', onData);
    giveBack();
    if (overBudget) {
      budget.overBudget += 1;
      onOverBudget();
    }
  };
  const onData = (chunk: Buffer): void => {
    if (bytes + chunk.length > (whole?.length ?? maxBytes)) return drop(false);
    if (whole) {
      chunk.copy(whole, bytes);
    } else {
      if (!budget.take(chunk.length)) return drop(true);
      charged += chunk.length;
      chunks.push(chunk);
    }
    bytes += chunk.length;
  };

  if (declared !== undefined && declared > maxBytes) dropped = true;
  else if (declared !== undefined) {
    if (budget.take(declared)) {
      charged = declared;
      whole = Buffer.allocUnsafe(declared);
    } else {
      dropped = true;
      budget.overBudget += 1;
      onOverBudget();
    }
  }
  if (!dropped) req.on('data', onData);
  req.once('end', () => {
    req.off('data', onData);
    const body = dropped ? undefined : whole ? (bytes === whole.length ? whole : undefined) : Buffer.concat(chunks, bytes);
    whole = undefined;
    chunks.length = 0;
    giveBack();
    done(body);
  });
  // A client that goes away before the end: nothing to decode, and the bytes go back.
  req.once('close', () => {
    if (req.complete) return;
    req.off('data', onData);
    whole = undefined;
    chunks.length = 0;
    giveBack();
  });
}

/** The request's Content-Length when it is a plain decimal number (the server refuses the others). */
function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d{1,15}$/.test(header)) return undefined;
  return Number(header);
}
