/**
 * `npm run check:dashboards` as part of `npm run test:ops`: every query of the Grafana
 * dashboards returns data from the real proxy, scraped by a real Prometheus (needs `prometheus`
 * on PATH; Debian: apt-get install prometheus). That the queries parse is checked without
 * Prometheus in npm test (test/unit/deployment-files.test.ts); this proves they return data.
 */
import { execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const root = projectRoot();
// A build of its own: other suites build dist/ at the same time.
const buildDir = join(root, 'dist', 'test-builds', 'check-dashboards');

beforeAll(() => {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', buildDir], { cwd: root });
}, 120_000);
afterAll(() => rmSync(buildDir, { recursive: true, force: true }));

describe('Grafana dashboards against a real Prometheus (check:dashboards)', () => {
  it('every panel target and variable query returns data', async () => {
    const child = spawn(process.execPath, [join(buildDir, 'scripts', 'check-dashboards.js')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    expect(code, output).toBe(0);
    expect(output).toMatch(/check:dashboards: (\d+) expressions: \1 returned data, 0 failed/);
  }, 180_000);
});
