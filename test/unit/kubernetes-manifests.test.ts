/**
 * deploy/kubernetes: every YAML file parses, every object validates against the Kubernetes and
 * Prometheus Operator schemas (kubernetes-models), and the example deployment and each overlay
 * agree with the code (test/support/kubernetes-manifests.ts says what is checked). No kubectl
 * here: the kustomizations are rendered by the support module; test/ops/kustomize.test.ts
 * checks that rendering against `kubectl kustomize`.
 */
import { describe, expect, it } from 'vitest';
import {
  consistencyProblems,
  envNamesReadByCode,
  filesOfKustomization,
  KUBERNETES_DIR,
  KUSTOMIZATIONS,
  kustomizationDir,
  memoryBytes,
  parseYamlFile,
  proxyPod,
  relativeToRoot,
  renderKustomization,
  strategicMerge,
  validateObject,
  yamlFilesUnder,
  type K8sObject,
} from '../support/kubernetes-manifests.js';

const MiB = 2 ** 20;
const files = yamlFilesUnder(KUBERNETES_DIR);
const kustomizationFiles = files.filter((path) => path.endsWith('/kustomization.yaml'));
const patchFiles = new Set(KUSTOMIZATIONS.flatMap((dir) => filesOfKustomization(kustomizationDir(dir)).patches));
const resourceFiles = files.filter((path) => !kustomizationFiles.includes(path) && !patchFiles.has(path));

/** A deep copy of the example deployment's objects, with `change` applied to the one named. */
function base(): K8sObject[] {
  return structuredClone(renderKustomization(kustomizationDir('.')));
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function changed(kind: string, name: string, change: (object: any) => void): K8sObject[] {
  const objects = base();
  const object = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!object) throw new Error(`no ${kind}/${name}`);
  change(object);
  return objects;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const proxyContainer = (deployment: any) => deployment.spec.template.spec.containers[0];

describe('deploy/kubernetes files', () => {
  it('has a kustomization for the example deployment and each overlay', () => {
    expect(kustomizationFiles.map(relativeToRoot).sort()).toEqual(
      [
        'deploy/kubernetes/base/kustomization.yaml',
        ...KUSTOMIZATIONS.map((dir) => `deploy/kubernetes/${dir === '.' ? '' : `${dir}/`}kustomization.yaml`),
      ].sort(),
    );
  });

  it('uses every YAML file in some kustomization', () => {
    const used = new Set(KUSTOMIZATIONS.flatMap((dir) => Object.values(filesOfKustomization(kustomizationDir(dir))).flat()));
    expect(resourceFiles.length + patchFiles.size).toBeGreaterThan(10);
    for (const path of [...resourceFiles, ...patchFiles]) expect(used.has(path), relativeToRoot(path)).toBe(true);
  });

  it.each(resourceFiles.map((path) => [relativeToRoot(path), path]))('%s: every object validates against its schema', (_name, path) => {
    const objects = parseYamlFile(path) as K8sObject[];
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) validateObject(object);
  });

  it.each([...patchFiles].map((path) => [relativeToRoot(path), path]))('%s: a patch of an object of the base', (_name, path) => {
    const targets = renderKustomization(kustomizationDir('.'));
    for (const patch of parseYamlFile(path) as K8sObject[]) {
      expect(
        targets.some((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name),
        `${patch.kind}/${patch.metadata.name}`,
      ).toBe(true);
    }
  });

  it('refuses a schema violation (the validation is real)', () => {
    const deployment = base().find((o) => o.kind === 'Deployment') as K8sObject;
    expect(() => validateObject(deployment)).not.toThrow();
    const broken = strategicMerge(deployment, {
      spec: { template: { spec: { containers: [{ name: 'proxy', ports: [{ name: 'http', containerPort: '8080x' }] }] } } },
    });
    expect(() => validateObject(broken as K8sObject)).toThrow(/containerPort must be integer/);
    expect(() => validateObject({ ...deployment, apiVersion: 'apps/v1beta1' })).toThrow(/no schema known/);
  });
});

describe.each(KUSTOMIZATIONS)('kustomization %s', (dir) => {
  const objects = renderKustomization(kustomizationDir(dir));

  it('renders objects that all validate', () => {
    expect(objects.length).toBeGreaterThan(8);
    for (const object of objects) validateObject(object);
  });

  it('agrees with the code and with itself', () => {
    expect(consistencyProblems(objects)).toEqual([]);
  });

  it('holds every object the deployment needs', () => {
    const kinds = new Set(objects.map((o) => o.kind));
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler', 'PodMonitor', 'NetworkPolicy', 'Secret', 'ConfigMap']) {
      expect(kinds.has(kind), kind).toBe(true);
    }
  });
});

describe('the pods run with', () => {
  it('the example config: the public Hiro API, memory tier only, listeners reachable in the pod network', () => {
    const { config, env } = proxyPod(renderKustomization(kustomizationDir('.')));
    expect(config.upstream.urls).toEqual(['https://api.hiro.so']);
    expect(config.redis.url).toBeNull();
    expect(config.admin.host).toBe('0.0.0.0');
    // The example Secret is empty on purpose: admin API off, no upstream key, no client keys.
    expect(config.admin.token).toBeNull();
    expect(config.upstream.apiKey).toBeNull();
    expect(config.apiKeys).toEqual([]);
    expect(Object.keys(env).sort()).toEqual(['ADMIN_TOKEN', 'API_KEYS_FILE', 'CONFIG_FILE', 'UPSTREAM_API_KEY']);
  });

  it('Redis in the overlays: in-cluster by Service name, managed from a Secret', () => {
    expect(proxyPod(renderKustomization(kustomizationDir('overlays/with-redis'))).config.redis.url).toBe('redis://stacks-cache-proxy-redis:6379');
    expect(proxyPod(renderKustomization(kustomizationDir('overlays/managed-redis'))).config.redis.url).toMatch(/^rediss:\/\//);
  });

  it('env names the code reads (the scan finds what src/config.ts and main.ts read)', () => {
    const names = envNamesReadByCode();
    for (const name of [
      'PORT',
      'HOST',
      'UPSTREAM_URLS',
      'UPSTREAM_API_KEY',
      'REDIS_URL',
      'LOG_LEVEL',
      'ADMIN_PORT',
      'ADMIN_HOST',
      'ADMIN_TOKEN',
      'CONFIG_FILE',
      'API_KEYS_FILE',
      'NODE_OPTIONS',
    ]) {
      expect(names.has(name), name).toBe(true);
    }
  });
});

describe('the consistency checks catch', () => {
  const problemsOf = (objects: K8sObject[]): string => consistencyProblems(objects).join('\n');

  it('a memory limit below the heap the proxy sizes, or one far above it', () => {
    const small = changed(
      'Deployment',
      'stacks-cache-proxy',
      (d) => (proxyContainer(d).resources = { requests: { memory: '384Mi' }, limits: { memory: '384Mi' } }),
    );
    expect(problemsOf(small)).toMatch(/memory limit 384Mi < old space 384 MiB \+ young generation 48 MiB \+ 128 MiB/);
    const large = changed(
      'Deployment',
      'stacks-cache-proxy',
      (d) => (proxyContainer(d).resources = { requests: { memory: '2Gi' }, limits: { memory: '2Gi' } }),
    );
    expect(problemsOf(large)).toMatch(/far above/);
    const burstable = changed('Deployment', 'stacks-cache-proxy', (d) => (proxyContainer(d).resources.requests.memory = '256Mi'));
    expect(problemsOf(burstable)).toMatch(/request 256Mi is not the limit/);
  });

  it('a memory tier changed in the ConfigMap without the limit', () => {
    const objects = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => {
      const config = JSON.parse(c.data['config.json']);
      config.cache.memory.maxBytes = 512 * MiB;
      c.data['config.json'] = JSON.stringify(config);
    });
    expect(problemsOf(objects)).toMatch(/old space 1152 MiB/);
  });

  it('a heap flag in NODE_OPTIONS, which wins over the derived heap', () => {
    const objects = changed('Deployment', 'stacks-cache-proxy', (d) =>
      proxyContainer(d).env.push({ name: 'NODE_OPTIONS', value: '--max-old-space-size=1024' }),
    );
    expect(problemsOf(objects)).toMatch(/old space 1024 MiB/);
  });

  it('a young generation grown by heap.maxSemiSpaceMiB or NODE_OPTIONS without the limit (three semi-spaces)', () => {
    const bySetting = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => {
      const config = JSON.parse(c.data['config.json']);
      config.heap = { ...config.heap, maxSemiSpaceMiB: 64 };
      c.data['config.json'] = JSON.stringify(config);
    });
    expect(problemsOf(bySetting)).toMatch(/< old space 384 MiB \+ young generation 192 MiB/);
    const byFlag = changed('Deployment', 'stacks-cache-proxy', (d) => proxyContainer(d).env.push({ name: 'NODE_OPTIONS', value: '--max-semi-space-size=64' }));
    expect(problemsOf(byFlag)).toMatch(/< old space 384 MiB \+ young generation 192 MiB/);
  });

  it('a shutdown grace longer than the pod is given', () => {
    const objects = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => {
      const config = JSON.parse(c.data['config.json']);
      config.server.shutdownGraceMs = 30_000;
      c.data['config.json'] = JSON.stringify(config);
    });
    expect(problemsOf(objects)).toMatch(/terminationGracePeriodSeconds 20 < preStop 5 s \+ server.shutdownGraceMs 30000 ms/);
    const noPreStop = changed('Deployment', 'stacks-cache-proxy', (d) => delete proxyContainer(d).lifecycle);
    expect(problemsOf(noPreStop)).toMatch(/no preStop sleep/);
  });

  it('probes on the wrong path or port', () => {
    const objects = changed('Deployment', 'stacks-cache-proxy', (d) => {
      proxyContainer(d).readinessProbe.httpGet.path = '/health';
      proxyContainer(d).livenessProbe.httpGet.port = 9999;
    });
    expect(problemsOf(objects)).toMatch(/readinessProbe is not GET \/ready/);
    expect(problemsOf(objects)).toMatch(/livenessProbe's port is not server.port \(8080\)/);
  });

  it('a port moved in the config but not in the container', () => {
    const objects = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => {
      const config = JSON.parse(c.data['config.json']);
      config.admin.port = 9191;
      c.data['config.json'] = JSON.stringify(config);
    });
    expect(problemsOf(objects)).toMatch(/container port "admin" is not admin.port \(9191\)/);
    expect(problemsOf(objects)).toMatch(/PodMonitor\/stacks-cache-proxy scrapes port admin, not the admin listener \(9191\)/);
  });

  it('an admin listener left on loopback', () => {
    const objects = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => {
      const config = JSON.parse(c.data['config.json']);
      config.admin.host = '127.0.0.1';
      c.data['config.json'] = JSON.stringify(config);
    });
    expect(problemsOf(objects)).toMatch(/admin.host 127.0.0.1 is loopback/);
  });

  it('an env name the code never reads, and a Secret key that is missing', () => {
    const typo = changed('Deployment', 'stacks-cache-proxy', (d) => proxyContainer(d).env.push({ name: 'REDIS_URI', value: 'redis://r:6379' }));
    expect(problemsOf(typo)).toMatch(/env REDIS_URI is read nowhere/);
    const missing = changed('Secret', 'stacks-cache-proxy-secrets', (s) => delete s.stringData.UPSTREAM_API_KEY);
    expect(problemsOf(missing)).toMatch(/Secret stacks-cache-proxy-secrets has no key UPSTREAM_API_KEY/);
    const file = changed('Secret', 'stacks-cache-proxy-secrets', (s) => delete s.stringData['api-keys.json']);
    expect(problemsOf(file)).toMatch(/has no key api-keys.json/);
  });

  it('an invalid setting in the ConfigMap (the pods would exit 2)', () => {
    const objects = changed('ConfigMap', 'stacks-cache-proxy-config', (c) => (c.data['config.json'] = '{"upstream": {"urls": ["ftp://x"]}}'));
    expect(problemsOf(objects)).toMatch(/upstream.urls\[0\] \(UPSTREAM_URLS\): must be an http\(s\) URL/);
  });

  it('the admin port opened to everyone, to every namespace, or not at all', () => {
    const open = changed('NetworkPolicy', 'stacks-cache-proxy', (p) => p.spec.ingress.push({}));
    expect(problemsOf(open)).toMatch(/opens the admin port 9091 to any address/);
    const allNamespaces = changed('NetworkPolicy', 'stacks-cache-proxy', (p) => (p.spec.ingress[1].from = [{ namespaceSelector: {} }]));
    expect(problemsOf(allNamespaces)).toMatch(/opens the admin port 9091 to every namespace/);
    const cidr = changed('NetworkPolicy', 'stacks-cache-proxy', (p) => p.spec.ingress[1].from.push({ ipBlock: { cidr: '0.0.0.0/0' } }));
    expect(problemsOf(cidr)).toMatch(/to any address/);
    const none = base().filter((o) => o.kind !== 'NetworkPolicy');
    expect(problemsOf(none)).toMatch(/no NetworkPolicy selects the proxy pods/);
    const publicClosed = changed('NetworkPolicy', 'stacks-cache-proxy', (p) => p.spec.ingress.shift());
    expect(problemsOf(publicClosed)).toMatch(/no ingress rule lets clients reach the public port/);
  });

  it('a Service exposing the admin port', () => {
    const objects = changed('Service', 'stacks-cache-proxy', (s) => s.spec.ports.push({ name: 'admin', port: 9091, targetPort: 'admin' }));
    expect(problemsOf(objects)).toMatch(/targets 9091, not the public port 8080/);
  });

  it('selectors that miss the proxy pods, and an autoscaler aimed elsewhere', () => {
    const pdb = changed('PodDisruptionBudget', 'stacks-cache-proxy', (p) => (p.spec.selector.matchLabels = { 'app.kubernetes.io/name': 'proxy' }));
    expect(problemsOf(pdb)).toMatch(/PodDisruptionBudget\/stacks-cache-proxy does not select the proxy pods/);
    const monitor = changed('PodMonitor', 'stacks-cache-proxy', (m) => (m.spec.selector.matchLabels = {}));
    expect(problemsOf(monitor)).toMatch(/PodMonitor\/stacks-cache-proxy does not select the proxy pods/);
    const hpa = changed('HorizontalPodAutoscaler', 'stacks-cache-proxy', (h) => (h.spec.scaleTargetRef.name = 'proxy'));
    expect(problemsOf(hpa)).toMatch(/does not scale Deployment stacks-cache-proxy/);
    const replicas = changed('Deployment', 'stacks-cache-proxy', (d) => (d.spec.replicas = 3));
    expect(problemsOf(replicas)).toMatch(/sets replicas/);
  });

  it('a Redis the proxy selectors would also pick, and a REDIS_URL naming no Service', () => {
    const objects = renderKustomization(kustomizationDir('overlays/with-redis'));
    const redis = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'stacks-cache-proxy-redis') as K8sObject & {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    redis.spec.template.metadata.labels['app.kubernetes.io/component'] = 'proxy';
    redis.spec.template.metadata.labels['app.kubernetes.io/name'] = 'stacks-cache-proxy';
    expect(problemsOf(objects)).toMatch(/Service\/stacks-cache-proxy also selects other pods/);
    const noService = renderKustomization(kustomizationDir('overlays/with-redis')).filter(
      (o) => !(o.kind === 'Service' && o.metadata.name === 'stacks-cache-proxy-redis'),
    );
    expect(problemsOf(noService)).toMatch(/REDIS_URL names stacks-cache-proxy-redis, which is no Service/);
  });

  it('objects spread over namespaces, and a hardening setting dropped', () => {
    const stray = changed('Service', 'stacks-cache-proxy', (s) => (s.metadata.namespace = 'default'));
    expect(problemsOf(stray)).toMatch(/in 2 namespaces/);
    const writable = changed('Deployment', 'stacks-cache-proxy', (d) => (proxyContainer(d).securityContext.readOnlyRootFilesystem = false));
    expect(problemsOf(writable)).toMatch(/writable root filesystem/);
  });
});

describe('memory quantities', () => {
  it('reads binary and decimal units', () => {
    expect(memoryBytes('512Mi')).toBe(512 * MiB);
    expect(memoryBytes('1Gi')).toBe(1024 * MiB);
    expect(memoryBytes('1G')).toBe(1e9);
    expect(memoryBytes(1048576)).toBe(MiB);
    expect(() => memoryBytes('1 GB')).toThrow(/unsupported/);
  });
});
