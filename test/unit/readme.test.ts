/** README.md is the user's manual: every setting and every exported metric must be in it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { catalogueSpecs } from '../../src/telemetry/catalogue.js';

const root = projectRoot();
const readme = readFileSync(join(root, 'README.md'), 'utf8');

function settingPaths(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([key, child]) => settingPaths(child, prefix ? `${prefix}.${key}` : key));
}

describe('README', () => {
  const defaults = JSON.parse(readFileSync(join(root, 'config', 'default.json'), 'utf8')) as unknown;

  it.each(settingPaths(defaults))('documents the setting %s', (path) => {
    expect(readme).toContain(`\`${path}\``);
  });

  it.each(['PORT', 'HOST', 'UPSTREAM_URLS', 'UPSTREAM_API_KEY', 'REDIS_URL', 'LOG_LEVEL', 'CONFIG_FILE'])('documents the variable %s', (name) => {
    expect(readme).toContain(`\`${name}\``);
  });

  it('documents every exported metric', () => {
    const names = catalogueSpecs({ redis: true }).map((spec) => spec.name);
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) expect(readme, name).toContain(`\`${name}\``);
  });

  it('shows the test command', () => {
    expect(readme).toContain('npm test');
  });
});
