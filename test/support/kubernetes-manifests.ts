/**
 * The Kubernetes manifests of deploy/kubernetes, read and checked for the tests: parsing every
 * YAML file, rendering a kustomization the way kustomize does for the few fields these files use
 * (test/ops/kustomize.test.ts checks this rendering equals `kubectl kustomize`), validating every
 * object against the Kubernetes (and Prometheus Operator) schemas, and checking the objects
 * against the code: ports and probes against the config the pods would load, the shutdown grace,
 * the memory limit against the heap the proxy sizes, env names, Secret keys, selectors and the
 * NetworkPolicy around the admin port.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Namespace, ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodMonitor, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { loadConfig, memoryTierBytes, type Config } from '../../src/config.js';
import { heapSizingFor, youngGenerationMiB } from '../../src/runtime/heap-sizing.js';
import { projectRoot } from '../../src/paths.js';

export const ROOT = projectRoot();
export const KUBERNETES_DIR = join(ROOT, 'deploy', 'kubernetes');
/** Every kustomization a user renders: the example deployment and each overlay. */
export const KUSTOMIZATIONS = ['.', 'overlays/with-redis', 'overlays/managed-redis'];

/** A Kubernetes object as parsed: only what the checks read is typed. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

// Loose views of the parts of objects the checks read; the schemas have validated their shapes.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;

const MODELS: Record<string, { new (data: Any): { validate(): void } }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};
const CLUSTER_SCOPED = new Set(['Namespace']);

export const describeObject = (object: K8sObject): string => `${object.kind}/${object.metadata.name}`;

/** Validates `object` against its kind's schema; throws with the schema's complaint. */
export function validateObject(object: K8sObject): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`${describeObject(object)}: no schema known for ${object.apiVersion} ${object.kind}`);
  try {
    new Model(object).validate();
  } catch (error) {
    throw new Error(`${describeObject(object)}: ${(error as Error).message}`, { cause: error });
  }
}

/** The documents of a YAML file (YAML 1.1, as kubectl reads it: `0440` is octal there). */
export function parseYamlFile(path: string): unknown[] {
  const documents = parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' });
  return documents.flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = document.toJS();
    return value === null ? [] : [value];
  });
}

export function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return yamlFilesUnder(path);
      return /\.ya?ml$/.test(name) ? [path] : [];
    });
}

// ---- rendering (the kustomize fields kubectl 1.20's kustomize reads, and only those used here) ----

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'bases', 'resources', 'patchesStrategicMerge']);

export interface Kustomization {
  namespace?: string;
  bases?: string[];
  resources?: string[];
  patchesStrategicMerge?: string[];
}

export function readKustomization(dir: string): Kustomization {
  const [document] = parseYamlFile(join(dir, 'kustomization.yaml')) as Record<string, unknown>[];
  if (!document) throw new Error(`${dir}/kustomization.yaml is empty`);
  for (const field of Object.keys(document)) {
    if (!KUSTOMIZATION_FIELDS.has(field))
      throw new Error(`${dir}/kustomization.yaml: field "${field}" is not rendered by these tests (nor read by kubectl 1.20)`);
  }
  return document as Kustomization;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A strategic merge patch, for what these patches hold: maps merge key by key (null deletes),
 * lists of named objects (containers, env) merge by name, other lists are replaced. A list of
 * objects without names would need its own merge key: refused rather than guessed.
 */
export function strategicMerge(base: unknown, patch: unknown, path = ''): unknown {
  if (isPlainObject(base) && isPlainObject(patch)) {
    const merged: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete merged[key];
      else merged[key] = key in base ? strategicMerge(base[key], value, `${path}.${key}`) : value;
    }
    return merged;
  }
  if (Array.isArray(base) && Array.isArray(patch) && patch.some(isPlainObject)) {
    if (!patch.every((item) => isPlainObject(item) && typeof item.name === 'string')) {
      throw new Error(`patch at ${path}: a list of objects without "name" needs a merge key these tests do not know`);
    }
    const patched = patch as Record<string, unknown>[];
    const names = new Set(patched.map((item) => item.name));
    const kept = (base as Record<string, unknown>[]).filter((item) => !names.has(item.name));
    const mergedItems = patched.map((item) => {
      const original = (base as Record<string, unknown>[]).find((candidate) => candidate.name === item.name);
      return original ? (strategicMerge(original, item, `${path}[${String(item.name)}]`) as Record<string, unknown>) : item;
    });
    return [...mergedItems, ...kept];
  }
  return patch;
}

const sameObject = (a: K8sObject, b: K8sObject): boolean => a.kind === b.kind && a.metadata.name === b.metadata.name;

/** The objects `kubectl kustomize <dir>` renders, for the fields KUSTOMIZATION_FIELDS. */
export function renderKustomization(dir: string): K8sObject[] {
  const kustomization = readKustomization(dir);
  let objects: K8sObject[] = [
    ...(kustomization.bases ?? []).flatMap((base) => renderKustomization(resolve(dir, base))),
    ...(kustomization.resources ?? []).flatMap((file) => parseYamlFile(resolve(dir, file)) as K8sObject[]),
  ];
  for (const file of kustomization.patchesStrategicMerge ?? []) {
    for (const patch of parseYamlFile(resolve(dir, file)) as K8sObject[]) {
      const index = objects.findIndex((object) => sameObject(object, patch));
      if (index < 0) throw new Error(`${relative(ROOT, resolve(dir, file))}: patches ${describeObject(patch)}, which is not in ${relative(ROOT, dir)}`);
      objects[index] = strategicMerge(objects[index], patch) as K8sObject;
    }
  }
  if (kustomization.namespace !== undefined) {
    const namespace = kustomization.namespace;
    objects = objects.map((object) => (CLUSTER_SCOPED.has(object.kind) ? object : { ...object, metadata: { ...object.metadata, namespace } }));
  }
  return objects;
}

/** The files a kustomization (and its bases) reads, patches apart from the resources. */
export function filesOfKustomization(dir: string): { resources: string[]; patches: string[] } {
  const kustomization = readKustomization(dir);
  const fromBases = (kustomization.bases ?? []).map((base) => filesOfKustomization(resolve(dir, base)));
  return {
    resources: [...fromBases.flatMap((files) => files.resources), ...(kustomization.resources ?? []).map((file) => resolve(dir, file))],
    patches: [...fromBases.flatMap((files) => files.patches), ...(kustomization.patchesStrategicMerge ?? []).map((file) => resolve(dir, file))],
  };
}

// ---- what the pods would run with ----

/** Environment variable names the code reads (`env.NAME`, `process.env.NAME` anywhere in src/). */
export function envNamesReadByCode(): Set<string> {
  const names = new Set<string>();
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (name.endsWith('.ts')) for (const match of readFileSync(path, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)) names.add(match[1] ?? '');
    }
  };
  visit(join(ROOT, 'src'));
  return names;
}

const labelsMatch = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels?.[key] === value);

function secretValue(secret: Any, key: string): string | undefined {
  if (secret.stringData?.[key] !== undefined) return String(secret.stringData[key]);
  if (secret.data?.[key] !== undefined) return Buffer.from(String(secret.data[key]), 'base64').toString('utf8');
  return undefined;
}

const MEMORY_UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** A Kubernetes memory quantity in bytes ("512Mi", "1G", "536870912"). */
export function memoryBytes(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)(k|M|G|Ki|Mi|Gi)?$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported memory quantity "${quantity}"`);
  return Number(match[1]) * (MEMORY_UNITS[match[2] ?? ''] ?? NaN);
}

const MiB = 2 ** 20;
/**
 * What node holds beyond V8's heap (the old space and the young generation of three semi-spaces):
 * code, buffers and what the allocator keeps. The recipe (old space + young generation + 128 MiB:
 * 304 MiB + twice the tier at the defaults) measured RSS peaks far below that under a flood of
 * misses (docs/benchmarks.md, "Memory a deployment needs").
 */
export const BEYOND_HEAP_MIB = 128;

export interface ProxyPod {
  deployment: Any;
  container: Any;
  config: Config;
  env: Record<string, string>;
}

/** The proxy Deployment (the one named stacks-cache-proxy) and the config its container would load. */
export function proxyPod(objects: K8sObject[]): ProxyPod {
  const deployment: Any = objects.find((object) => object.kind === 'Deployment' && object.metadata.name === 'stacks-cache-proxy');
  if (!deployment) throw new Error('no Deployment stacks-cache-proxy');
  const container: Any = deployment.spec.template.spec.containers.find((c: Any) => c.name === 'proxy');
  if (!container) throw new Error('Deployment stacks-cache-proxy has no container "proxy"');
  const find = (kind: string, name: string): Any => objects.find((object) => object.kind === kind && object.metadata.name === name);

  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = String(variable.value);
    else if (variable.valueFrom?.secretKeyRef) {
      const { name, key, optional } = variable.valueFrom.secretKeyRef;
      const secret = find('Secret', name);
      const value = secret ? secretValue(secret, key) : undefined;
      if (value === undefined && !optional) throw new Error(`env ${variable.name}: Secret ${name} has no key ${key}`);
      if (value !== undefined) env[variable.name] = value;
    } else if (variable.valueFrom?.configMapKeyRef) {
      const { name, key } = variable.valueFrom.configMapKeyRef;
      const value = find('ConfigMap', name)?.data?.[key];
      if (value === undefined) throw new Error(`env ${variable.name}: ConfigMap ${name} has no key ${key}`);
      env[variable.name] = String(value);
    } else throw new Error(`env ${variable.name}: a source these tests do not read`);
  }

  // The files the container sees, from its ConfigMap and Secret volumes.
  const files = new Map<string, string>();
  for (const mount of container.volumeMounts ?? []) {
    const volume = deployment.spec.template.spec.volumes?.find((v: Any) => v.name === mount.name);
    if (!volume) throw new Error(`volumeMount ${mount.name}: no such volume`);
    const source = volume.configMap
      ? {
          object: find('ConfigMap', volume.configMap.name),
          what: `ConfigMap ${volume.configMap.name}`,
          read: (o: Any, k: string) => o.data?.[k] as string | undefined,
          items: volume.configMap.items,
        }
      : volume.secret
        ? { object: find('Secret', volume.secret.secretName), what: `Secret ${volume.secret.secretName}`, read: secretValue, items: volume.secret.items }
        : undefined;
    if (!source) continue;
    if (!source.object) throw new Error(`volume ${volume.name}: ${source.what} is not in the manifests`);
    const keys: { key: string; path: string }[] =
      source.items ?? Object.keys({ ...source.object.data, ...source.object.stringData }).map((key) => ({ key, path: key }));
    for (const { key, path } of keys) {
      const content = source.read(source.object, key);
      if (content === undefined) throw new Error(`volume ${volume.name}: ${source.what} has no key ${key}`);
      files.set(join(mount.mountPath, path), content);
    }
  }
  const defaultConfig = join(ROOT, 'config', 'default.json');
  const readFile = (path: string): string => {
    const content = files.get(path);
    if (content !== undefined) return content;
    if (resolve(path) === defaultConfig) return readFileSync(path, 'utf8');
    throw new Error(`${path} is not mounted in the proxy container`);
  };
  return { deployment, container, config: loadConfig(env, readFile), env };
}

/** The container port `port` (a number or a port name) resolves to, in `container`. */
function containerPortNumber(container: Any, port: string | number | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((p: Any) => p.name === port)?.containerPort;
}

function secondsOfPreStop(container: Any): number | undefined {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep?.seconds !== undefined) return Number(preStop.sleep.seconds);
  const command: string[] | undefined = preStop?.exec?.command;
  if (command?.length === 2 && command[0] === 'sleep' && /^\d+$/.test(command[1] ?? '')) return Number(command[1]);
  return undefined;
}

const isLoopback = (host: string): boolean => host === 'localhost' || host.startsWith('127.') || host === '::1';

/**
 * Every way the rendered objects disagree with the code or with each other, as sentences; an
 * empty list when they agree.
 */
export function consistencyProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, problem: string): void => {
    if (!ok) problems.push(problem);
  };
  let pod: ProxyPod;
  try {
    pod = proxyPod(objects);
  } catch (error) {
    return [(error as Error).message];
  }
  const { deployment, container, config, env } = pod;
  const podSpec = deployment.spec.template.spec;
  const podLabels: Record<string, string> = deployment.spec.template.metadata.labels;
  const publicPort = config.server.port;
  const adminPort = config.admin.port;

  // Namespaces: one for everything namespaced, and it is the Namespace object's.
  const namespaces = new Set(objects.filter((o) => !CLUSTER_SCOPED.has(o.kind)).map((o) => o.metadata.namespace));
  check(namespaces.size === 1, `namespaced objects are in ${namespaces.size} namespaces (${[...namespaces].join(', ')}): expected one`);
  for (const namespace of objects.filter((o) => o.kind === 'Namespace')) {
    check(namespaces.has(namespace.metadata.name), `Namespace ${namespace.metadata.name} holds none of the objects`);
  }

  // Env: names the code reads.
  const known = envNamesReadByCode();
  for (const name of Object.keys(env)) check(known.has(name), `env ${name} is read nowhere in src/ (known: ${[...known].sort().join(', ')})`);

  // Ports and listeners.
  check(containerPortNumber(container, 'http') === publicPort, `container port "http" is not server.port (${publicPort})`);
  check(containerPortNumber(container, 'admin') === adminPort, `container port "admin" is not admin.port (${adminPort})`);
  check(!isLoopback(config.server.host), `server.host ${config.server.host} is loopback: the Service cannot reach it`);
  check(!isLoopback(config.admin.host), `admin.host ${config.admin.host} is loopback: Prometheus cannot scrape it`);

  // Probes: /health (the process answers) and /ready (tip known, an upstream usable), on the port the Service sends clients to.
  const liveness = container.livenessProbe?.httpGet;
  const readiness = container.readinessProbe?.httpGet;
  check(liveness?.path === '/health', `livenessProbe is not GET /health (${JSON.stringify(liveness)})`);
  check(readiness?.path === '/ready', `readinessProbe is not GET /ready (${JSON.stringify(readiness)})`);
  check(containerPortNumber(container, liveness?.port) === publicPort, `livenessProbe's port is not server.port (${publicPort})`);
  check(containerPortNumber(container, readiness?.port) === publicPort, `readinessProbe's port is not server.port (${publicPort})`);

  // Shutdown: the kubelet's SIGKILL must not come before the preStop sleep, server.shutdownGraceMs
  // for requests in flight and the rest of the close (the tip poll waits up to chainTip.pollTimeoutMs).
  const preStop = secondsOfPreStop(container);
  const termination = Number(podSpec.terminationGracePeriodSeconds ?? 30);
  const needed = (preStop ?? 0) + Math.ceil(config.server.shutdownGraceMs / 1000) + Math.ceil(config.chainTip.pollTimeoutMs / 1000);
  check(preStop !== undefined && preStop > 0, 'no preStop sleep: load balancers would still send to a pod that stopped accepting');
  check(
    termination >= needed,
    `terminationGracePeriodSeconds ${termination} < preStop ${preStop ?? 0} s + server.shutdownGraceMs ${config.server.shutdownGraceMs} ms + chainTip.pollTimeoutMs ${config.chainTip.pollTimeoutMs} ms`,
  );

  // Memory: V8's heap as the proxy sizes it (or as NODE_OPTIONS sets it): the old space and the
  // young generation (three semi-spaces), plus what node holds beyond it.
  const sizing = heapSizingFor(memoryTierBytes(config), config.heap.maxOldSpaceMiB, config.heap.maxSemiSpaceMiB);
  const oldFlag = /--max[-_]old[-_]space[-_]size[= ](\d+)/.exec(env.NODE_OPTIONS ?? '');
  const semiFlag = /--max[-_]semi[-_]space[-_]size[= ](\d+)/.exec(env.NODE_OPTIONS ?? '');
  const oldSpaceMiB = oldFlag ? Number(oldFlag[1]) : sizing.maxOldSpaceMiB;
  const youngMiB = youngGenerationMiB(semiFlag ? Number(semiFlag[1]) : sizing.maxSemiSpaceMiB);
  const neededBytes = (oldSpaceMiB + youngMiB + BEYOND_HEAP_MIB) * MiB;
  const heap = `old space ${oldSpaceMiB} MiB + young generation ${youngMiB} MiB + ${BEYOND_HEAP_MIB} MiB`;
  const limit = container.resources?.limits?.memory;
  const request = container.resources?.requests?.memory;
  if (limit === undefined || request === undefined) problems.push('the proxy container has no memory request or limit');
  else {
    const tier = `memory tier ${memoryTierBytes(config) / MiB} MiB (${config.redis.url ? 'cache.memory.maxBytesWithRedis' : 'cache.memory.maxBytes'})`;
    check(memoryBytes(limit) >= neededBytes, `memory limit ${limit} < ${heap} for the ${tier}`);
    check(memoryBytes(limit) <= neededBytes * 1.5, `memory limit ${limit} is far above ${heap} for the ${tier}`);
    check(memoryBytes(request) === memoryBytes(limit), `memory request ${request} is not the limit ${limit}: the heap grows to its limit under load`);
  }

  // Hardening of every container.
  for (const deploymentObject of objects.filter((o) => o.kind === 'Deployment') as Any[]) {
    const spec = deploymentObject.spec.template.spec;
    check(spec.automountServiceAccountToken === false, `${describeObject(deploymentObject)} mounts a service account token`);
    for (const c of spec.containers) {
      const where = `${describeObject(deploymentObject)} container ${c.name}`;
      check((c.securityContext?.runAsNonRoot ?? spec.securityContext?.runAsNonRoot) === true, `${where} may run as root`);
      check(c.securityContext?.readOnlyRootFilesystem === true, `${where} has a writable root filesystem`);
      check(c.securityContext?.allowPrivilegeEscalation === false, `${where} allows privilege escalation`);
      check(
        labelsMatch(deploymentObject.spec.selector.matchLabels, deploymentObject.spec.template.metadata.labels),
        `${describeObject(deploymentObject)}'s selector does not match its pods`,
      );
    }
  }

  // Selectors: the Service, PDB, PodMonitor and NetworkPolicy pick the proxy pods and no other pods.
  const otherPods: Record<string, string>[] = (objects.filter((o) => o.kind === 'Deployment' && o !== deployment) as Any[]).map(
    (d) => d.spec.template.metadata.labels,
  );
  const selectsProxyOnly = (what: string, selector: Record<string, string> | undefined): void => {
    check(labelsMatch(selector, podLabels), `${what} does not select the proxy pods`);
    check(!otherPods.some((labels) => labelsMatch(selector, labels)), `${what} also selects other pods`);
  };
  const services = objects.filter((o) => o.kind === 'Service') as Any[];
  const proxyServices = services.filter((s) => labelsMatch(s.spec.selector, podLabels));
  check(proxyServices.length > 0, 'no Service selects the proxy pods');
  for (const service of proxyServices) {
    selectsProxyOnly(describeObject(service), service.spec.selector);
    for (const port of service.spec.ports) {
      const target = containerPortNumber(container, port.targetPort ?? port.port);
      check(
        target === publicPort,
        `${describeObject(service)} port ${port.name ?? port.port} targets ${target}, not the public port ${publicPort} (the admin listener stays out of Services)`,
      );
    }
  }
  const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget') as Any[];
  check(pdbs.length === 1, `${pdbs.length} PodDisruptionBudgets: expected one`);
  for (const pdb of pdbs) selectsProxyOnly(describeObject(pdb), pdb.spec.selector.matchLabels);
  const hpas = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler') as Any[];
  check(hpas.length === 1, `${hpas.length} HorizontalPodAutoscalers: expected one`);
  for (const hpa of hpas) {
    const target = hpa.spec.scaleTargetRef;
    check(
      target.apiVersion === 'apps/v1' && target.kind === 'Deployment' && target.name === deployment.metadata.name,
      `${describeObject(hpa)} does not scale Deployment ${deployment.metadata.name}`,
    );
    check(hpa.spec.minReplicas >= 2, `${describeObject(hpa)} allows fewer than two pods: a restart would leave none serving`);
    check(deployment.spec.replicas === undefined, 'the Deployment sets replicas: every apply would reset what the HorizontalPodAutoscaler chose');
  }
  const monitors = objects.filter((o) => o.kind === 'PodMonitor') as Any[];
  check(monitors.length === 1, `${monitors.length} PodMonitors: expected one`);
  for (const monitor of monitors) {
    selectsProxyOnly(describeObject(monitor), monitor.spec.selector.matchLabels);
    for (const endpoint of monitor.spec.podMetricsEndpoints) {
      check(
        containerPortNumber(container, endpoint.port) === adminPort,
        `${describeObject(monitor)} scrapes port ${endpoint.port}, not the admin listener (${adminPort})`,
      );
      check(endpoint.path === '/metrics', `${describeObject(monitor)} scrapes ${endpoint.path}, not /metrics`);
    }
  }

  // The NetworkPolicy: clients reach the public port; only peers inside the cluster named by
  // namespace (or the proxy's own namespace) reach the admin port, never "anyone".
  const policies = (objects.filter((o) => o.kind === 'NetworkPolicy') as Any[]).filter((p) => labelsMatch(p.spec.podSelector.matchLabels, podLabels));
  check(policies.length > 0, 'no NetworkPolicy selects the proxy pods: the admin port is open to the whole cluster');
  for (const policy of policies) selectsProxyOnly(describeObject(policy), policy.spec.podSelector.matchLabels);
  const ingressRules: Any[] = policies.filter((p) => (p.spec.policyTypes ?? ['Ingress']).includes('Ingress')).flatMap((p) => p.spec.ingress ?? []);
  const rulesOpening = (port: number): Any[] =>
    ingressRules.filter((rule) => !rule.ports?.length || rule.ports.some((p: Any) => containerPortNumber(container, p.port) === port));
  const fromAnywhere = (rule: Any): boolean => !rule.from?.length || rule.from.some((peer: Any) => peer.ipBlock !== undefined);
  check(rulesOpening(publicPort).some(fromAnywhere), `no ingress rule lets clients reach the public port ${publicPort}`);
  const adminRules = rulesOpening(adminPort);
  check(adminRules.length > 0, `no ingress rule lets Prometheus reach the admin port ${adminPort}`);
  for (const rule of adminRules) {
    check(!fromAnywhere(rule), `an ingress rule opens the admin port ${adminPort} to any address`);
    for (const peer of rule.from ?? []) {
      const namespaceLabels = peer.namespaceSelector?.matchLabels;
      const allNamespaces = peer.namespaceSelector !== undefined && (namespaceLabels === undefined || Object.keys(namespaceLabels).length === 0);
      check(!allNamespaces, `an ingress rule opens the admin port ${adminPort} to every namespace`);
    }
  }

  // An in-cluster REDIS_URL names a Service of these manifests, on one of its ports.
  const redis = config.redis.url ? URL.parse(config.redis.url) : null;
  if (redis && redis.protocol === 'redis:' && !redis.hostname.includes('.')) {
    const service = services.find((s) => s.metadata.name === redis.hostname);
    check(service !== undefined, `REDIS_URL names ${redis.hostname}, which is no Service of these manifests`);
    check(service?.spec.ports.some((p: Any) => p.port === Number(redis.port || 6379)) ?? false, `Service ${redis.hostname} has no port ${redis.port || 6379}`);
  }

  // The image is this version's.
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  check(container.image === `stacks-cache-proxy:${version}`, `the proxy's image ${container.image} is not stacks-cache-proxy:${version} (package.json)`);
  return problems;
}

export const relativeToRoot = (path: string): string => relative(ROOT, path);
export const kustomizationDir = (name: string): string => resolve(KUBERNETES_DIR, name);
