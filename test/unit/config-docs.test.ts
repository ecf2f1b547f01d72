/** docs/configuration.md is generated from the settings schema; it must be the page the generator makes now. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CONFIGURATION_PAGE, renderConfigurationPage, settingDocs } from '../../scripts/config-docs.js';
import { ENV_NAMES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

const root = projectRoot();
const defaults = JSON.parse(readFileSync(join(root, 'config', 'default.json'), 'utf8')) as Record<string, unknown>;

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` writes from the schema (else run `npm run docs:config`)', () => {
    const committed = readFileSync(join(root, CONFIGURATION_PAGE), 'utf8');
    expect(committed === renderConfigurationPage(), 'docs/configuration.md is stale: run `npm run docs:config` and commit the page').toBe(true);
  });

  it('names every setting by its full dotted key, with its default', () => {
    const page = renderConfigurationPage();
    const keys = settingDocs(defaults).map((doc) => doc.key);
    expect(keys).toContain('cache.memory.maxBytes');
    expect(keys).toContain('live.fanout.maxClients');
    for (const key of keys) expect(page, key).toMatch(new RegExp(`^\\| \`${key.replace(/\./g, '\\.')}\` \\| \``, 'm'));
  });

  it('names every environment variable next to its setting', () => {
    const page = renderConfigurationPage();
    for (const [key, env] of Object.entries(ENV_NAMES)) expect(page, env).toContain(`| \`${key}\` |`);
    expect(page).toContain('| `UPSTREAM_URLS` | [`upstream.urls`](#upstream) |');
    expect(page).toContain('`CONFIG_FILE`');
  });

  it('refuses a setting the schema does not explain', () => {
    const schema = z.object({ server: z.object({ port: z.number().describe('the port'), host: z.string() }) });
    expect(() => settingDocs({ server: { port: 1, host: 'h' } }, schema)).toThrow('server.host has no .describe() text');
  });

  it('refuses a default the schema does not know', () => {
    expect(() => settingDocs({ ...defaults, nonsense: 1 })).toThrow('nonsense is in config/default.json but not in the schema');
  });

  it('shows byte sizes with their MiB', () => {
    expect(renderConfigurationPage()).toContain('| `cache.memory.maxBytes` | `134217728` (128 MiB) |');
  });
});
