/**
 * `kubectl kustomize` renders the example deployment and each overlay offline (kubectl on PATH,
 * or the one KUBECTL names; any version from 1.20, whose kustomize is v2.0.3), the rendered
 * objects validate and agree with the code, and they equal what the unit tests render without
 * kubectl (test/support/kubernetes-manifests.ts), so the checks of `npm test` hold for what
 * kubectl applies.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { consistencyProblems, KUSTOMIZATIONS, kustomizationDir, renderKustomization, validateObject, type K8sObject } from '../support/kubernetes-manifests.js';

const KUBECTL = process.env.KUBECTL ?? 'kubectl';

async function kubectlKustomize(dir: string): Promise<K8sObject[]> {
  // No cluster is contacted: point kubectl at an empty kubeconfig so nothing local is read.
  const { stdout } = await promisify(execFile)(KUBECTL, ['kustomize', dir], {
    env: { ...process.env, KUBECONFIG: '/dev/null' },
    maxBuffer: 16 * 2 ** 20,
  });
  return parseAllDocuments(stdout, { version: '1.1' })
    .map((document) => {
      expect(document.errors).toEqual([]);
      return document.toJS() as K8sObject | null;
    })
    .filter((object): object is K8sObject => object !== null);
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Order-free form for comparing: keys sorted, lists of named objects sorted by name (strategic merge orders them its own way). */
function normalised(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(normalised);
    return items.every((item) => isPlainObject(item) && typeof item.name === 'string')
      ? [...(items as Record<string, string>[])].sort((a, b) => String(a.name).localeCompare(String(b.name)))
      : items;
  }
  if (isPlainObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, normalised(value[key])]),
    );
  return value;
}
const byIdentity = (objects: K8sObject[]): Map<string, unknown> =>
  new Map(objects.map((object) => [`${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`, normalised(object)]));

describe.each(KUSTOMIZATIONS)('kubectl kustomize %s', (dir) => {
  it('renders offline, and every object validates and agrees with the code', async () => {
    const objects = await kubectlKustomize(kustomizationDir(dir));
    expect(objects.length).toBeGreaterThan(8);
    for (const object of objects) validateObject(object);
    expect(consistencyProblems(objects)).toEqual([]);
  });

  it('renders what the unit tests check', async () => {
    const rendered = byIdentity(await kubectlKustomize(kustomizationDir(dir)));
    const emulated = byIdentity(renderKustomization(kustomizationDir(dir)));
    expect([...rendered.keys()].sort()).toEqual([...emulated.keys()].sort());
    for (const [identity, object] of rendered) expect(object, identity).toEqual(emulated.get(identity));
  });
});
