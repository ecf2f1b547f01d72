/**
 * The upstream's whole public GET surface, read from its own published descriptions, and which
 * route the upstream would pick for a path. Sources: the official client's generated schema
 * (`@stacks/blockchain-api-client`, deprecated routes included), the v9 OpenAPI
 * (shared/fixtures/upstream-openapi.yaml), the last hand-written v7 OpenAPI
 * (shared/fixtures/upstream-v7/openapi.yaml) and the route list of read-surface.md §1.
 *
 * The pick is stated independently of src/routes/route-matcher.ts (a tree walked depth first):
 * among the templates a path fits, find-my-way takes the one whose segments, read left to right,
 * are static where the others' are parameters (static < parameter < wildcard), which is the
 * order its depth-first search with backtracking reaches them in.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROUTES } from '../../src/routes/route-table.js';
import type { RouteId } from '../../src/routes/route-spec.js';
import { findProjectRoot, RECORDED } from '../../testkit/index.js';

const shared = (file: string): string => path.resolve(findProjectRoot(), '../shared', file);

/** `{x}` and `:x` alike become `:x`; the trailing `/` the upstream ignores is dropped. */
export function normalizeTemplate(template: string): string {
  const colon = template.replace(/\{([^}]+)\}/g, ':$1');
  return colon.length > 1 && colon.endsWith('/') ? colon.slice(0, -1) : colon;
}

/** The shape of a template, parameter names aside: two templates with one shape are one route. */
export const shapeOf = (template: string): string => normalizeTemplate(template).replace(/:[^/]+/g, ':');

/** GET paths of the client's generated schema (openapi-typescript: `"<path>": { … get: operations[…] }`). */
export function clientSchemaGetPaths(): string[] {
  const require = createRequire(import.meta.url);
  const schema = path.join(path.dirname(require.resolve('@stacks/blockchain-api-client/package.json')), 'src/generated/schema.d.ts');
  const paths: string[] = [];
  let current: string | undefined;
  for (const line of readFileSync(schema, 'utf8').split('\n')) {
    if (line.startsWith('export interface webhooks') || line.startsWith('export interface components')) break;
    const opened = /^ {4}"(\/[^"]*)": \{$/.exec(line);
    if (opened) current = opened[1];
    else if (current && /^ {8}get: /.test(line)) paths.push(current);
  }
  return paths;
}

const openApiCache = new Map<string, string[]>();

/** GET paths of an OpenAPI file (parsed once per process: the v9 file is 3 MB). */
function openApiGetPaths(file: string): string[] {
  const known = openApiCache.get(file);
  if (known) return known;
  const doc = parseYaml(readFileSync(shared(file), 'utf8')) as { paths: Record<string, { get?: unknown }> };
  const paths = Object.entries(doc.paths)
    .filter(([, operations]) => operations.get !== undefined)
    .map(([template]) => template);
  openApiCache.set(file, paths);
  return paths;
}

export const v9OpenApiGetPaths = (): string[] => openApiGetPaths('fixtures/upstream-openapi.yaml');
export const v7OpenApiGetPaths = (): string[] => openApiGetPaths('fixtures/upstream-v7/openapi.yaml');

/**
 * Route paths named in read-surface.md §1, with `a|b|c` segments and `[/:x]` optional parts
 * expanded. Globs (`/block/*`, `/stx_supply*`) and relative mentions (`/blocks/average-times`
 * after `/extended/v2/blocks/`) are left out: they name families, not paths.
 */
export function readSurfacePaths(): string[] {
  const text = readFileSync(shared('spec/read-surface.md'), 'utf8');
  const section = text.slice(text.indexOf('## 1.'), text.indexOf('## 2.'));
  const found = new Set<string>();
  for (const [, raw] of section.matchAll(/`(\/(?:extended|v1|v2|v3)[^`\s]*)`/g)) {
    if (/[*…<?]/.test(raw as string)) continue;
    const optional = /^(.*)\[(\/[^\]]+)\](.*)$/.exec(raw as string);
    const spellings = optional ? [`${optional[1]}${optional[3]}`, `${optional[1]}${optional[2]}${optional[3]}`] : [raw as string];
    for (const spelling of spellings) {
      let expanded = [''];
      for (const segment of spelling.split('/').slice(1)) {
        expanded = expanded.flatMap((prefix) => segment.split('|').map((choice) => `${prefix}/${choice}`));
      }
      for (const p of expanded) found.add(p);
    }
  }
  return [...found];
}

/**
 * The upstream's GET routes (v9.0.2): the client's schema (a superset of the v9 OpenAPI, which
 * leaves deprecated routes out), the 301s the spec hides (upstream-contract §5) and the
 * stacks-node proxy under /v2 (read-surface §1.3).
 */
export function upstreamGetTemplates(): string[] {
  const all = [...clientSchemaGetPaths(), ...v9OpenApiGetPaths(), '/', '/extended/v1/status', '/v2/*'];
  const byShape = new Map<string, string>();
  for (const template of all) if (!byShape.has(shapeOf(template))) byShape.set(shapeOf(template), normalizeTemplate(template));
  return [...byShape.values()];
}

type Kind = 0 | 1 | 2; // static, parameter, wildcard

interface Template {
  template: string;
  segments: string[];
  kinds: Kind[];
}

const segmentsOf = (p: string): string[] => normalizeTemplate(p).split('/').slice(1);

function compileTemplate(template: string): Template {
  const segments = segmentsOf(template);
  const kinds = segments.map((s): Kind => (s === '*' ? 2 : s.startsWith(':') ? 1 : 0));
  return { template, segments, kinds };
}

function fits(t: Template, segments: string[]): boolean {
  for (const [i, kind] of t.kinds.entries()) {
    if (kind === 2) return true;
    const segment = segments[i];
    if (segment === undefined || segment === '') return false;
    if (kind === 0 && segment !== t.segments[i]) return false;
  }
  return segments.length === t.segments.length;
}

function precedes(a: Template, b: Template): boolean {
  for (let i = 0; i < Math.min(a.kinds.length, b.kinds.length); i++) {
    if (a.kinds[i] !== b.kinds[i]) return (a.kinds[i] as number) < (b.kinds[i] as number);
  }
  return false;
}

export type Destination = RouteId | 'passthrough';

export interface UpstreamRouting {
  templates: string[];
  /** The template the upstream picks for a path, if any. */
  pick(path: string): string | undefined;
  /** Where the proxy must send a path: the cached route of the upstream's pick, else the passthrough. */
  destination(path: string): Destination;
}

export function upstreamRouting(templates = upstreamGetTemplates()): UpstreamRouting {
  const compiled = templates.map(compileTemplate);
  const cached = new Map(ROUTES.map((route) => [shapeOf(route.path), route.id]));
  const pick = (p: string): string | undefined => {
    const segments = segmentsOf(p.split('?')[0] as string);
    let best: Template | undefined;
    for (const t of compiled) if (fits(t, segments) && (!best || precedes(t, best))) best = t;
    return best?.template;
  };
  return {
    templates,
    pick,
    destination: (p) => {
      const chosen = pick(p);
      return (chosen === undefined ? undefined : cached.get(shapeOf(chosen))) ?? 'passthrough';
    },
  };
}

const TX = RECORDED.confirmedTxId;
const PRINCIPALS = [RECORDED.principal, 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7', RECORDED.contractId];

/** Real-looking values per parameter name (first: the one used when another parameter varies). */
const VALUES: [RegExp, string[]][] = [
  [/^(principal|address|p|a|addr|pool_principal|stacker|contract_address)$/, PRINCIPALS],
  [/^(tx_id|id)$/, [TX, TX.slice(2)]],
  [/^(height_or_hash|h)$/, ['latest', String(RECORDED.tipHeight), RECORDED.tipIndexHash, RECORDED.tipBlockHash.slice(2)]],
  [/^(block_hash|hash|burn_block_hash|index_block_hash)$/, [RECORDED.tipBlockHash]],
  [/^(height|burn_block_height|tenure_height|cycle_number|bond_index|block_height)$/, [String(RECORDED.burnHeightWithBlock), '1']],
  [/^timestamp$/, ['1718000000']],
  [/^contract_id$/, [RECORDED.contractId]],
  [/^contract_name$/, ['pox-4']],
  [/^(token|asset_identifier)$/, [`${RECORDED.contractId}::stx`]],
  [/^network$/, ['mainnet']],
  [/^(pox|poxN)$/, ['pox4', 'pox3']],
  [/^signer_key$/, [`0x02${'ab'.repeat(32)}`]],
  [/^(burnchain_address|btc)$/, ['bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq']],
  [/^name$/, ['muneeb.id']],
  [/^tld$/, ['id']],
  [/^zoneFileHash$/, ['b100a68235244b012854a95f9114695679002af9']],
  [/^(blockchain|chain)$/, ['stacks']],
  [/^\*$/, ['info', 'accounts/ST29V10QEA7BRZBTWRFC4M70NJ4J6RJB5P1C6EE84']],
];

function valuesFor(name: string): string[] {
  return VALUES.find(([pattern]) => pattern.test(name))?.[1] ?? ['x1'];
}

export interface SurfacePath {
  path: string;
  /** The template it was made from, and how. */
  from: string;
}

/** Every static segment of the templates, by the shape of the segments before it (one tree node). */
function staticsByPosition(templates: string[]): Map<string, Set<string>> {
  const byPrefix = new Map<string, Set<string>>();
  for (const template of templates) {
    const segments = segmentsOf(template);
    for (const [i, segment] of segments.entries()) {
      if (segment.startsWith(':') || segment === '*') continue;
      const prefix = shapeOf(`/${segments.slice(0, i).join('/')}`);
      const set = byPrefix.get(prefix) ?? new Set<string>();
      set.add(segment);
      byPrefix.set(prefix, set);
    }
  }
  return byPrefix;
}

/**
 * Paths made from `templates`: each parameter with each of its real-looking values (the others
 * at their first), and each parameter with the literal static segments the upstream has at that
 * position (`/extended/v1/tx/:tx_id` as `/extended/v1/tx/mempool`). `everyLiteral`: every static
 * segment of the surface at every parameter, not only those at the same position.
 */
export function instantiate(templates: string[], routing: UpstreamRouting, everyLiteral = false): SurfacePath[] {
  const siblings = staticsByPosition(routing.templates);
  const allLiterals = [...new Set([...siblings.values()].flatMap((set) => [...set]))];
  const out = new Map<string, SurfacePath>();
  const add = (p: string, from: string) => {
    if (!out.has(p)) out.set(p, { path: p, from });
  };
  for (const template of templates) {
    const raw = template.replace(/\{([^}]+)\}/g, ':$1');
    const segments = raw.split('/').slice(1);
    const variable = segments.flatMap((s, i) => (s.startsWith(':') || s === '*' ? [i] : []));
    const first = segments.map((s) => (s.startsWith(':') || s === '*' ? (valuesFor(s.replace(/^:/, ''))[0] as string) : s));
    const build = (i: number, value: string) => `/${first.map((s, j) => (j === i ? value : s)).join('/')}`;
    add(`/${first.join('/')}`, `${template} (real-looking values)`);
    for (const i of variable) {
      const name = (segments[i] as string).replace(/^:/, '');
      for (const value of valuesFor(name)) add(build(i, value), `${template} (${name}=${value})`);
      const prefix = shapeOf(`/${segments.slice(0, i).join('/')}`);
      const literals = everyLiteral ? allLiterals : [...(siblings.get(prefix) ?? [])];
      for (const literal of literals) add(build(i, literal), `${template} (${name}=literal ${literal})`);
    }
  }
  return [...out.values()];
}
