/**
 * The proxy as it was at another commit, built once under /tmp for side-by-side runs: the
 * commit's tree (git archive, so the repository's worktrees are not touched), this checkout's
 * node_modules linked in, compiled with tsc. Reused while its dist/ is there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './proc.js';

export function baselineBuild(commit: string): string {
  const dir = join(tmpdir(), `scp-baseline-${commit}`);
  if (existsSync(join(dir, 'dist', 'src', 'main.js'))) return dir;
  process.stderr.write(`bench: building the proxy at ${commit} in ${dir}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', commit], { maxBuffer: 512 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'));
  execFileSync(join(dir, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  return dir;
}
