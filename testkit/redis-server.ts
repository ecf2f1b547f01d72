/**
 * Starts a throwaway `redis-server` on a random free port for a test suite, so Redis-backed
 * tests never depend on (or disturb) a Redis the machine may already run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port.js';
import { exited, isPortOpen, waitFor } from './processes.js';

export interface TestRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL): a crash as far as clients can tell. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const START_LIMIT_MS = 10_000;

function launch(port: number): ChildProcess {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], {
    stdio: 'ignore',
  });
  child.on('error', (error) => {
    throw new Error(`cannot start redis-server (is it installed?): ${error.message}`);
  });
  return child;
}

const listening = (port: number) => waitFor(() => isPortOpen(port), { timeoutMs: START_LIMIT_MS, what: `redis-server to open port ${port}` });

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child = launch(port);
  await listening(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    restart: async () => {
      child = launch(port);
      await listening(port);
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited(child);
    },
  };
}
