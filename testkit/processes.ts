/**
 * Child processes and servers that start asynchronously: wait until they answer, stop them
 * without leaving one behind. Shared by the redis-server launcher, the dashboard check and the
 * bench, which all start servers they do not control.
 */
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  timeoutMs: number;
  /** Pause between attempts. */
  intervalMs?: number;
  /** Named in the timeout error. */
  what: string;
}

/** Resolves once `condition` holds; rejects when it still does not after `timeoutMs`. */
export async function waitFor(condition: () => Promise<boolean>, { timeoutMs, intervalMs = 50, what }: WaitOptions): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Whether something accepts TCP connections on the loopback port right now. */
export function isPortOpen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Whether `url` answers with a status below 500 right now. */
export async function isAnswering(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).status < 500;
  } catch {
    return false; // not listening yet
  }
}

/** Resolves when the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** SIGTERM, and SIGKILL if it is still running after `graceMs`: a stuck child cannot hold up the caller. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const stopped = await Promise.race([exited(child).then(() => true), sleep(graceMs).then(() => false)]);
  if (!stopped) {
    child.kill('SIGKILL');
    await exited(child);
  }
}
