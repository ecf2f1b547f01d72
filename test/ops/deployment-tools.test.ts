/**
 * Deployment files checked by the real tools (`npm run test:ops`): docker-compose.yml as the
 * installed compose reads it, and the Prometheus alerting rules with promtool (check rules, their
 * unit tests, check config). Needs `docker compose` or `docker-compose` (the Compose file is
 * validated and normalised by it; no Docker engine is needed) and promtool (Debian: apt-get
 * install docker-compose prometheus). Without them these tests fail, never skip. What an npm
 * package can check (the Compose schema, PromQL syntax, the Dockerfile, the health check) is in
 * test/unit/deployment-files.test.ts, inside `npm test`.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { expectHealthCheckWorks } from '../support/health-check.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const composeFile = join(root, 'docker-compose.yml');

// ---------------------------------------------------------------------------------------------
// The Prometheus files, parsed: only the fields the tests read.
interface PrometheusConfig {
  rule_files: string[];
  scrape_configs: { job_name: string; scrape_interval?: string; static_configs: { targets: string[] }[] }[];
}

function readYaml<T>(file: string): T {
  return parseYaml(readFileSync(join(root, file), 'utf8')) as T;
}

// ---------------------------------------------------------------------------------------------
// Compose CLI: the docker compose plugin (v2) or docker-compose (1.27+ or v2).
interface ComposeCli {
  command: string;
  prefix: string[];
  major: number;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
}

function describeRun(what: string, result: SpawnSyncReturns<string>): string {
  if (result.error) return `${what} could not run: ${result.error.message}`;
  return `${what} exited ${result.status ?? result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}

let composeCli: ComposeCli | undefined;
function findCompose(): ComposeCli {
  if (composeCli) return composeCli;
  for (const [command, prefix] of [
    ['docker', ['compose']],
    ['docker-compose', []],
  ] as const) {
    const version = run(command, [...prefix, 'version', '--short']);
    const major = /(\d+)\.\d+/.exec(version.stdout ?? '')?.[1];
    if (version.status === 0 && major) return (composeCli = { command, prefix: [...prefix], major: Number(major) });
  }
  throw new Error(
    'Neither `docker compose` (Compose v2 plugin) nor `docker-compose` is installed, so docker-compose.yml cannot be ' +
      'validated. Install one (Debian/Ubuntu: apt-get install docker-compose); no Docker engine is needed.',
  );
}

/** The environment without anything that would change how docker-compose.yml is interpolated. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('COMPOSE_') || ['UPSTREAM_URLS', 'UPSTREAM_API_KEY', 'LOG_LEVEL', 'ADMIN_TOKEN', 'GRAFANA_ADMIN_PASSWORD'].includes(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

let scratch: string;
let emptyEnvFile: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'deployment-files-'));
  // A developer's own .env must not change what is checked here.
  emptyEnvFile = join(scratch, 'empty.env');
  writeFileSync(emptyEnvFile, '');
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function compose(args: string[], env: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  const cli = findCompose();
  return run(cli.command, [...cli.prefix, '--env-file', emptyEnvFile, '-f', composeFile, '--project-directory', root, ...args], env);
}

interface Service {
  [key: string]: unknown;
}

const models = new Map<string, Record<string, Service>>();

/** The normalised compose model, as printed by `config` (cached per environment). */
function composeModel(extraEnv: Record<string, string> = {}): Record<string, Service> {
  const cacheKey = JSON.stringify(extraEnv);
  const cached = models.get(cacheKey);
  if (cached) return cached;
  const cli = findCompose();
  const env = cleanEnv(extraEnv);
  const result = cli.major >= 2 ? compose(['config', '--format', 'json'], env) : compose(['config'], env);
  expect(result.status, describeRun('compose config', result)).toBe(0);
  // Compose v2 prints JSON when asked; 1.x only YAML.
  const model = (cli.major >= 2 ? JSON.parse(result.stdout) : parseYaml(result.stdout)) as { services?: Record<string, Service> };
  expect(model.services, 'compose config printed no services').toBeTypeOf('object');
  models.set(cacheKey, model.services!);
  return model.services!;
}

const asRecord = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** "[host_ip:]published:target" from short ("8080:8080") or long ({host_ip, published, target}) port syntax. */
function ports(service: Service): string[] {
  return asList(service.ports).map((port) => {
    if (typeof port === 'string' || typeof port === 'number') return String(port).replace(/\/tcp$/, '');
    const { host_ip: hostIp, published, target } = asRecord(port);
    return `${hostIp ? `${String(hostIp)}:` : ''}${String(published)}:${String(target)}`;
  });
}

/** Bind mounts as "source:target[:ro]" from short strings or long ({source, target, read_only}) syntax. */
function volumes(service: Service): string[] {
  return asList(service.volumes).map((volume) => {
    if (typeof volume === 'string') {
      const [source = '', target = '', mode] = volume.split(':');
      return `${resolve(source)}:${target}${mode?.split(',').includes('ro') ? ':ro' : ''}`;
    }
    const { source, target, read_only: readOnly } = asRecord(volume);
    return `${resolve(String(source))}:${String(target)}${readOnly === true ? ':ro' : ''}`;
  });
}

function environment(service: Service): Record<string, string> {
  const env = service.environment;
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((entry) => String(entry).split(/=(.*)/s).slice(0, 2) as [string, string]));
  }
  return Object.fromEntries(Object.entries(asRecord(env)).map(([key, value]) => [key, String(value)]));
}

function dependsOn(service: Service): Record<string, string> {
  const deps = service.depends_on;
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [String(name), 'service_started']));
  return Object.fromEntries(Object.entries(asRecord(deps)).map(([name, spec]) => [name, String(asRecord(spec).condition ?? 'service_started')]));
}

function healthTest(service: Service): string[] {
  const test = asRecord(service.healthcheck).test;
  return Array.isArray(test) ? test.map(String) : typeof test === 'string' ? ['CMD-SHELL', test] : [];
}

function command(service: Service): string[] {
  return asList(service.command).map(String);
}

// ---------------------------------------------------------------------------------------------
describe('docker-compose.yml', () => {
  it('is valid for the installed compose (config -q exits 0)', () => {
    const result = compose(['config', '-q'], cleanEnv());
    expect(result.status, describeRun('compose config -q', result)).toBe(0);
  });

  it('declares exactly redis, proxy, prometheus and grafana', () => {
    expect(Object.keys(composeModel()).sort()).toEqual(['grafana', 'prometheus', 'proxy', 'redis']);
  });

  it('runs redis as a pure LRU cache with a ping health check', () => {
    const redis = composeModel().redis!;
    expect(redis.image).toBe('redis:7-alpine');
    const args = command(redis);
    const after = (flag: string) => args[args.indexOf(flag) + 1];
    expect(args).toContain('--save');
    expect(after('--save')).toBe('');
    expect(after('--appendonly')).toBe('no');
    expect(after('--maxmemory')).toBe('256mb');
    expect(after('--maxmemory-policy')).toBe('allkeys-lru');
    expect(healthTest(redis).join(' ')).toMatch(/redis-cli ping$/);
  });

  it('builds the proxy from this folder, wired to redis, with the documented defaults', () => {
    const proxy = composeModel().proxy!;
    const build = proxy.build;
    expect(resolve(typeof build === 'string' ? build : String(asRecord(build).context))).toBe(resolve(root));
    // The admin listener: reachable by Prometheus inside the network, published on the host's loopback only.
    expect(ports(proxy).sort()).toEqual(['127.0.0.1:9091:9091', '8080:8080']);
    expect(environment(proxy)).toMatchObject({
      UPSTREAM_URLS: 'https://api.hiro.so',
      REDIS_URL: 'redis://redis:6379',
      LOG_LEVEL: 'info',
      ADMIN_HOST: '0.0.0.0',
      ADMIN_PORT: '9091',
      ADMIN_TOKEN: '',
      UPSTREAM_API_KEY: '',
    });
    expect(dependsOn(proxy)).toEqual({ redis: 'service_healthy' });
    expect(proxy.restart).toBe('unless-stopped');
    const check = healthTest(proxy);
    expect(check[0]).toBe('CMD');
    expect(check.join(' ')).toContain('/health');
  });

  it('takes UPSTREAM_URLS, UPSTREAM_API_KEY and LOG_LEVEL from the environment', () => {
    const env = environment(composeModel({ UPSTREAM_URLS: 'http://a.example:3999,http://b.example', UPSTREAM_API_KEY: 'k-123', LOG_LEVEL: 'debug' }).proxy!);
    expect(env.UPSTREAM_URLS).toBe('http://a.example:3999,http://b.example');
    expect(env.UPSTREAM_API_KEY).toBe('k-123');
    expect(env.LOG_LEVEL).toBe('debug');
  });

  it('runs prometheus on the rules in config/prometheus', () => {
    const prometheus = composeModel().prometheus!;
    expect(String(prometheus.image)).toMatch(/^prom\/prometheus:v[23]\.\d+\.\d+$/);
    expect(volumes(prometheus)).toContain(`${resolve(root, 'config/prometheus')}:/etc/prometheus:ro`);
    expect(command(prometheus)).toContain('--config.file=/etc/prometheus/prometheus.yml');
    expect(ports(prometheus)).toContain('9090:9090');

    const config = readYaml<PrometheusConfig>('config/prometheus/prometheus.yml');
    expect(config.rule_files).toEqual(['alerts.yml']);
    const jobs = config.scrape_configs.filter((job) => job.job_name === 'stacks-proxy');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.scrape_interval).toBe('5s');
    // The admin listener, where /metrics is served.
    expect(jobs[0]!.static_configs.flatMap((group) => group.targets)).toEqual(['proxy:9091']);
  });

  it('runs grafana with an anonymous read-only viewer and the provisioned dashboards', () => {
    const services = composeModel({ GRAFANA_ADMIN_PASSWORD: 's3cret' });
    const grafana = services.grafana!;
    expect(String(grafana.image)).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    expect(ports(grafana)).toContain('3000:3000');
    expect(environment(grafana)).toMatchObject({
      GF_AUTH_ANONYMOUS_ENABLED: 'true',
      GF_AUTH_ANONYMOUS_ORG_ROLE: 'Viewer',
      GF_AUTH_DISABLE_LOGIN_FORM: 'false',
      GF_SECURITY_ADMIN_PASSWORD: 's3cret',
      GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH: '/var/lib/grafana/dashboards/stacks-proxy.json',
    });
    expect(environment(composeModel().grafana!).GF_SECURITY_ADMIN_PASSWORD).toBe('admin');
    expect(volumes(grafana)).toEqual(
      expect.arrayContaining([
        `${resolve(root, 'grafana/provisioning')}:/etc/grafana/provisioning:ro`,
        `${resolve(root, 'grafana/dashboards')}:/var/lib/grafana/dashboards:ro`,
      ]),
    );
    expect(Object.keys(dependsOn(grafana))).toContain('prometheus');
  });

  it('has a proxy health check that really asks /health', async () => {
    const check = healthTest(composeModel().proxy!);
    expect(check[0]).toBe('CMD');
    await expectHealthCheckWorks(check.slice(1));
    await expectHealthCheckWorks(check.slice(1), '127.0.0.2', '127.0.0.2');
  });
});

describe('Prometheus alerting rules', () => {
  it('scripts/check-alerts.sh is executable', () => {
    expect(() => accessSync(join(root, 'scripts/check-alerts.sh'), constants.X_OK)).not.toThrow();
  });

  it('pass promtool check rules, test rules and check config (scripts/check-alerts.sh)', () => {
    const result = run(join(root, 'scripts/check-alerts.sh'), []);
    expect(result.status, describeRun('scripts/check-alerts.sh', result)).toBe(0);
  });
});
