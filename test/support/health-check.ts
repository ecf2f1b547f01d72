/**
 * The container health check (the Dockerfile's HEALTHCHECK and docker-compose.yml's proxy
 * healthcheck share one `node -e` snippet), run for real against servers that answer /health.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';

/** The exit code of the check run with this environment (PORT, HOST as the container has them). */
export function runHealthCheck(args: string[], env: Record<string, string>): Promise<number | null> {
  return new Promise((resolveExit, reject) => {
    const [exe, ...rest] = args;
    // The image runs `node`; here that is this very Node binary.
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    if (!('HOST' in env)) delete childEnv.HOST;
    const child = spawn(exe === 'node' ? process.execPath : exe!, rest, { env: childEnv, stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveExit(code);
    });
  });
}

async function listen(status: number, host: string): Promise<{ server: Server; port: number; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(req.url === '/health' ? status : 404).end();
  });
  await new Promise<void>((done) => server.listen(0, host, done));
  return { server, port: (server.address() as AddressInfo).port, paths };
}

/**
 * The check passes on a 200 /health and fails on a 503 and on a refused connection, where the
 * service listens on `listenHost` and the container's HOST is `hostEnv` (undefined: not set).
 */
export async function expectHealthCheckWorks(args: string[], listenHost = '127.0.0.1', hostEnv?: string): Promise<void> {
  const hostVar: Record<string, string> = hostEnv === undefined ? {} : { HOST: hostEnv };
  const healthy = await listen(200, listenHost);
  const failing = await listen(503, listenHost);
  try {
    expect(await runHealthCheck(args, { ...hostVar, PORT: String(healthy.port) }), `health check against a 200 /health on ${listenHost}`).toBe(0);
    expect(healthy.paths).toEqual(['/health']);
    expect(await runHealthCheck(args, { ...hostVar, PORT: String(failing.port) }), 'health check against a 503 /health').toBe(1);
  } finally {
    await new Promise((done) => healthy.server.close(done));
    await new Promise((done) => failing.server.close(done));
  }
  // Nothing listening: connection refused must also fail the check.
  expect(await runHealthCheck(args, { ...hostVar, PORT: String(failing.port) }), 'health check with nothing listening').toBe(1);
}
