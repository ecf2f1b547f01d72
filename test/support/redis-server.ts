/**
 * Starts a throwaway `redis-server` on a random free port for a test suite, so Redis-backed
 * tests never depend on (or disturb) a Redis the machine may already run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port.js';

export interface TestRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL): a crash as far as clients can tell. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not open port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function launch(port: number): ChildProcess {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], {
    stdio: 'ignore',
  });
  child.on('error', (error) => {
    throw new Error(`cannot start redis-server (is it installed?): ${error.message}`);
  });
  return child;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child = launch(port);
  await waitForPort(port, 10_000);
  const exited = (proc: ChildProcess) =>
    new Promise<void>((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once('exit', () => resolve())));
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    restart: async () => {
      child = launch(port);
      await waitForPort(port, 10_000);
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited(child);
    },
  };
}
