/**
 * The entry point (`node dist/src/main.js`) as a newcomer meets it: on a Node older than 24 it
 * stops at once with exit 2 and says how to get Node 24, before loading anything that would
 * fail deep inside (undici on Node 20); on Node 24 it logs which upstreams it reads from and how
 * to change them.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';

const root = projectRoot();
// A build of its own: other suites build dist/ at the same time.
const buildDir = join(root, 'dist', 'test-builds', 'entry-point');
const main = join(buildDir, 'src', 'main.js');
let scratch: string;
let fakeOldNode: string;

beforeAll(() => {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', buildDir], { cwd: root });
  scratch = mkdtempSync(join(tmpdir(), 'entry-point-'));
  // Loaded with --import before the entry point: reports Node 20.20.2, and lists every module
  // the process loads (written to stderr at exit), so the test sees what ran before the check.
  fakeOldNode = join(scratch, 'fake-node-20.mjs');
  writeFileSync(
    fakeOldNode,
    [
      "import { registerHooks } from 'node:module';",
      "Object.defineProperty(process.versions, 'node', { value: '20.20.2' });",
      'const loaded = [];',
      'registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });',
      "process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n'));",
    ].join('\n'),
  );
}, 120_000);
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(buildDir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runEntry(node: string, args: string[], env: Record<string, string>): Run {
  const result = spawnSync(node, [...args, main], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function expectNeedsNode24(run: Run, version: string): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain(`stacks-cache-proxy: Node.js 24 or later is needed; this is Node.js ${version}`);
  expect(run.stderr).toContain('`npm ci` installs Node 24 for the npm scripts');
  expect(run.stderr).toContain('nvm install 24');
  expect(run.stderr).toContain('https://nodejs.org/en/download');
  expect(run.stderr).not.toMatch(/TypeError|at .*undici/);
}

/** The first `node` on PATH outside node_modules (the machine's own), or none. */
function machineNode(): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), '/usr/local/bin', '/usr/bin']) {
    if (dir === '' || dir.split(/[\\/]/).includes('node_modules')) continue;
    const candidate = join(dir, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

describe('the Node.js version check', () => {
  it('stops an older Node with exit 2 and how to get Node 24, before loading anything else', () => {
    const run = runEntry(process.execPath, ['--import', pathToFileURL(fakeOldNode).href], { UPSTREAM_URLS: 'http://127.0.0.1:9' });
    expectNeedsNode24(run, '20.20.2');
    const loaded = JSON.parse(/^LOADED (.*)$/m.exec(run.stderr)?.[1] ?? '[]') as string[];
    const ours = loaded.filter((url) => url.startsWith('file:') && url !== pathToFileURL(fakeOldNode).href);
    // The entry point and the check's own module; no config, no composition root, no undici.
    expect(ours).toEqual([pathToFileURL(main).href, pathToFileURL(join(buildDir, 'src', 'runtime', 'node-version.js')).href]);
    expect(run.stdout).toBe('');
  });

  it("stops this machine's own Node if it is older than 24 (and lets a newer one through to the configuration)", () => {
    const node = machineNode() ?? process.execPath;
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
    // An invalid PORT: a Node new enough gets past the version check and stops at the configuration.
    const run = runEntry(node, [], { PORT: 'not-a-port' });
    if (Number(version.split('.')[0]) < 24) {
      expectNeedsNode24(run, version);
      // process.execPath: the binary itself, links resolved.
      expect(run.stderr).toContain(`(${realpathSync(node)})`);
    } else {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('invalid configuration');
      expect(run.stderr).not.toContain('Node.js 24 or later is needed');
    }
  });
});

describe('start-up notes', () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await startFakeUpstream();
  });
  afterAll(async () => {
    await upstream.close();
  });

  it('names the upstreams it reads from and UPSTREAM_URLS, once; no key warning off the public Hiro API', async () => {
    const child = spawn(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => stdout.includes('"msg":"listening"'), { timeout: 20_000 }).toBe(true);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; upstreams?: string[] });
    const notes = lines.filter((line) => line.msg.includes('UPSTREAM_URLS'));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ level: 30, upstreams: [upstream.url] });
    expect(notes[0]!.msg).toContain(`reading from ${upstream.url}`);
    expect(lines.some((line) => line.msg.includes('UPSTREAM_API_KEY'))).toBe(false);
  });
});
