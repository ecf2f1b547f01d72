/**
 * wrk (Debian's /usr/bin/wrk, or wrk on PATH) as the load generator of the hit scenarios.
 *
 * Why not autocannon there: autocannon runs in a Node process, and its own work per request
 * (parsing every response in JavaScript, its histograms) is of the same order as a cache hit's.
 * Each connection sends its next request only once autocannon has handled the previous answer,
 * so the generator, not the server, sets much of the pace, and a slower server loses less req/s
 * than its CPU per request says: the ratios flatter the slower one. wrk's per-request cost is a
 * few µs of C; the bench reports each generator's own CPU per request so this is measured, not
 * assumed (docs/benchmarks.md). wrk runs one thread: the servers have the other core.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WRK = ['/usr/bin/wrk', 'wrk'].find((command) => spawnSync(command, ['-v']).error === undefined);
/** Whether wrk can run here (`wrk -v` exits non-zero but runs). */
export const HAS_WRK = WRK !== undefined;

// wrk's summary as one JSON line: counts, latency percentiles in µs, and its own CPU time
// (os.clock(): the process's CPU, every thread) in seconds.
const REPORT_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d,"p50Us":%d,"p99Us":%d,"cpuSeconds":%.6f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status, latency:percentile(50), latency:percentile(99), os.clock()))
end
`;
let scriptPath: string | undefined;

export interface WrkRun {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  cpuSeconds: number;
}

// With a paths file (one request target a line): each request asks for one of them at random.
const randomPathsScript = (pathsFile: string): string => `
local paths = {}
for line in io.lines(${JSON.stringify(pathsFile)}) do paths[#paths + 1] = line end
math.randomseed(os.time())
request = function()
  return wrk.format(nil, paths[math.random(#paths)])
end
`;
const randomScripts = new Map<string, string>();

/**
 * A closed loop on `url` for `seconds` (whole seconds, at least 1: wrk's unit) with `connections`
 * connections, `threads` threads (default one); with `pathsFile`, every request asks for a
 * random line of that file (request targets on `url`'s host) instead of `url`'s own path.
 */
export async function runWrk(url: string, connections: number, seconds: number, threads = 1, pathsFile?: string): Promise<WrkRun> {
  if (!WRK) throw new Error('wrk is not installed');
  // Written once: wrk processes that run at the same time read it while another would rewrite it.
  if (!scriptPath) {
    scriptPath = join(mkdtempSync(join(tmpdir(), 'scp-wrk-')), 'report.lua');
    writeFileSync(scriptPath, REPORT_SCRIPT);
  }
  let script = scriptPath;
  if (pathsFile) {
    script = randomScripts.get(pathsFile) ?? join(mkdtempSync(join(tmpdir(), 'scp-wrk-')), 'random.lua');
    if (!randomScripts.has(pathsFile)) writeFileSync(script, randomPathsScript(pathsFile) + REPORT_SCRIPT);
    randomScripts.set(pathsFile, script);
  }
  const child = spawn(WRK, [`-t${threads}`, `-c${Math.max(connections, threads)}`, `-d${Math.max(1, Math.round(seconds))}s`, '-s', script, url], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const line = out.split('\n').find((l) => l.startsWith('{'));
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code}: ${out.slice(-500)}`);
  const r = JSON.parse(line) as Record<string, number>;
  const seconds2 = (r.durationUs ?? 0) / 1e6;
  return {
    requests: r.requests ?? 0,
    seconds: seconds2 || seconds,
    p50Ms: Math.round((r.p50Us ?? 0) / 10) / 100,
    p99Ms: Math.round((r.p99Us ?? 0) / 10) / 100,
    errors: (r.connect ?? 0) + (r.read ?? 0) + (r.write ?? 0) + (r.timeout ?? 0),
    non2xx: r.status ?? 0,
    cpuSeconds: r.cpuSeconds ?? 0,
  };
}
