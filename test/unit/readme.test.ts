/**
 * The manual: README.md is a short front page, the docs/ pages hold the rest. Every setting is on the
 * configuration page (generated: test/unit/config-docs.test.ts keeps it fresh), every exported metric
 * on the operations page, and every relative link of README and docs/ leads to a file and heading
 * that exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { catalogueSpecs } from '../../src/telemetry/catalogue.js';

const root = projectRoot();
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const readme = read('README.md');
const docPages = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => join('docs', name));

function settingPaths(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0) return [prefix];
  return Object.entries(value).flatMap(([key, child]) => settingPaths(child, prefix ? `${prefix}.${key}` : key));
}

/** Lines outside fenced code blocks: headings and links inside them are examples, not structure. */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to "-", repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}_\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Relative link targets of a page ("docs/x.md#y", "#y"); web addresses are not checked here. */
function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? '';
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) targets.push(target);
    }
  }
  return targets;
}

describe('README.md, the front page', () => {
  it('is read in five minutes: at most 20,000 bytes', () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(20_000);
  });

  it.each(['npm ci', 'npm start', 'npm test', 'npm run test:ops', 'UPSTREAM_API_KEY', 'redis-server'])('shows %s', (text) => {
    expect(readme).toContain(text);
  });

  it('names the tools npm run test:ops needs', () => {
    for (const tool of ['docker compose', 'promtool', 'Prometheus', 'kubectl', 'Chromium']) expect(readme, tool).toContain(tool);
  });

  it('links every page of docs/', () => {
    for (const page of docPages) expect(readme, page).toContain(`](${page})`);
  });
});

describe('docs/ pages', () => {
  const configuration = read('docs/configuration.md');
  const operations = read('docs/operations.md');
  const defaults = JSON.parse(read('config/default.json')) as unknown;

  it.each(settingPaths(defaults))('configuration.md documents the setting %s', (path) => {
    expect(configuration).toContain(`| \`${path}\` |`);
  });

  it.each([
    'PORT',
    'HOST',
    'WORKERS',
    'UPSTREAM_URLS',
    'UPSTREAM_API_KEY',
    'REDIS_URL',
    'LOG_LEVEL',
    'CONFIG_FILE',
    'ADMIN_PORT',
    'ADMIN_HOST',
    'ADMIN_TOKEN',
    'API_KEYS_FILE',
  ])('configuration.md documents the variable %s', (name) => {
    expect(configuration).toContain(`\`${name}\``);
  });

  it('operations.md documents every exported metric', () => {
    const names = catalogueSpecs({ redis: true }).map((spec) => spec.name);
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) expect(operations, name).toContain(`| \`${name}\` |`);
  });

  it('operations.md has a runbook for every alert rule', () => {
    const alerts = [...read('config/prometheus/alerts.yml').matchAll(/^\s*- alert: (\w+)$/gm)].map((match) => match[1] ?? '');
    expect(alerts.length).toBeGreaterThan(5);
    const anchors = headingAnchors(operations);
    for (const alert of alerts) expect(anchors, alert).toContain(alert.toLowerCase());
  });

  it('say that cache keys are v2, as the code writes them', () => {
    const caching = read('docs/caching-and-freshness.md');
    expect(caching).toContain('<prefix>:v2:<route-id>:<canonical request>');
    expect([readme, ...docPages.map(read)].join('\n')).not.toMatch(/<prefix>:v1:/);
  });
});

describe('relative links', () => {
  const pages = ['README.md', ...docPages];

  it.each(pages)('in %s lead to files and headings that exist', (page) => {
    const text = read(page);
    const broken: string[] = [];
    for (const target of relativeLinks(text)) {
      const [path = '', anchor] = target.split('#', 2);
      const file = path === '' ? join(root, page) : join(root, dirname(page), decodeURIComponent(path));
      if (!existsSync(file)) {
        broken.push(`${target}: no file ${relative(root, file)}`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !headingAnchors(readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${target}: no heading #${anchor} in ${relative(root, file)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds anchors the way GitHub makes them', () => {
    const anchors = headingAnchors("# A `b` (c.d)\n## Operator's checklist\n## X\n## X\n```\n# not a heading\n```");
    expect([...anchors]).toEqual(['a-b-cd', 'operators-checklist', 'x', 'x-1']);
  });
});
