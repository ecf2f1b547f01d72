/**
 * vitest globalSetup: compiles src/ into dist/ once, before any test file runs. The suites that
 * start the proxy as a process (`node dist/src/main.js`) or import the package's built entry need
 * it; built once here, no two files compile into the same dist/ at the same time.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/paths.js';

export default function buildDist(): void {
  const root = projectRoot();
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
}
