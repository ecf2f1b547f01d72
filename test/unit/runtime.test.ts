/**
 * The project runs and is tested on Node 24 LTS, whatever Node the machine has: the `node`
 * dev dependency puts a Node 24 binary first on the PATH of every npm script (README
 * "Requirements"). These fail if a script ever runs on another major again.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};

describe('runtime', () => {
  it('runs the tests on Node 24', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });

  it('pins the bundled Node binary to the major the engines field and the Docker image name', () => {
    const bundled = pkg.devDependencies.node ?? '';
    expect(bundled.split('.')[0]).toBe('24');
    expect(pkg.engines.node).toBe('>=24');
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    expect(dockerfile).toMatch(/NODE_IMAGE=node:24-/);
  });
});
