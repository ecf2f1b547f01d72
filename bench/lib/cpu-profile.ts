/**
 * A V8 CPU profile (`node --cpu-prof`) read as where a request's time goes: each sample's time
 * is given to the script its innermost frame runs in, grouped so that node's modules, each
 * package, each of the proxy's directories and V8's own entries ((garbage collector), (program),
 * native functions such as the writev system call) are a row each; divided by the requests
 * served, in µs per request. Pure: the bench reads the files and knows the request counts.
 */

/** The parts of a .cpuprofile this reads. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string } }>;
  samples: number[];
  timeDeltas: number[];
}

/** What a frame's script is counted as: `node:http` for node:_http_server, `ioredis` for a package, `proxy: cache` for src/cache/, ... */
export function categoryOf(functionName: string, url: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : `native: ${functionName}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/dist\/src\/(?:([^/]+)\/)?[^/]+$/.exec(url);
  if (own) return `proxy: ${own[1] ?? 'src'}`;
  const bench = /\/dist\/bench\/(.+)$/.exec(url);
  if (bench) return `bench: ${bench[1]}`;
  const internal = /^node:(?:internal\/)?_?([a-z]+)/.exec(url);
  if (internal) return `node: ${internal[1]}`;
  return url;
}

/** µs per request per category, `(idle)` left out; and the busy total. */
export function perRequest(profile: CpuProfile, requests: number): { busyMicros: number; byCategory: Map<string, number> } {
  const categoryOfNode = new Map(profile.nodes.map((n) => [n.id, categoryOf(n.callFrame.functionName, n.callFrame.url)]));
  const byCategory = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const category = categoryOfNode.get(profile.samples[i] as number) ?? '(unknown)';
    if (category === '(idle)') continue;
    const micros = (profile.timeDeltas[i] ?? 0) / requests;
    byCategory.set(category, (byCategory.get(category) ?? 0) + micros);
    busy += micros;
  }
  return { busyMicros: busy, byCategory };
}
