/** The package entry's wiring: package.json exports and types, Express an optional peer only, and never imported by src/. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';

const root = projectRoot();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | string | undefined>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the package entry', () => {
  it('exports src/index.ts (built) with its types', () => {
    expect(pkg.exports).toEqual({ '.': { types: './dist/src/index.d.ts', import: './dist/src/index.js' } });
    expect(pkg.types).toBe('./dist/src/index.d.ts');
  });

  it('has Express as an optional peer and a dev dependency, never a dependency', () => {
    expect((pkg.peerDependencies as Record<string, string>).express).toBeDefined();
    expect(pkg.peerDependenciesMeta).toEqual({ express: { optional: true } });
    expect((pkg.devDependencies as Record<string, string>).express).toBeDefined();
    expect((pkg.dependencies as Record<string, string>).express).toBeUndefined();
  });

  it('src/ never imports express (npm start never loads it)', () => {
    const importers = sourceFiles(join(root, 'src')).filter((file) =>
      /from\s+['"]express['"]|import\(\s*['"]express['"]|require\(\s*['"]express['"]/.test(readFileSync(file, 'utf8')),
    );
    expect(importers).toEqual([]);
  });
});
