/**
 * The proxy's own upstream requests by purpose, read from its Prometheus page (issue 28's
 * `stacks_proxy_own_upstream_requests_total{purpose}`), for the wallet mix's report.
 */
/** `stacks_proxy_own_upstream_requests_total{purpose}` from a Prometheus text page; undefined when absent. */
export function ownRequestsByPurpose(metrics: string): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  let found = false;
  for (const line of metrics.split('\n')) {
    const m = /^stacks_proxy_own_upstream_requests_total\{([^}]*)\}\s+([0-9.e+]+)/.exec(line);
    if (!m) continue;
    found = true;
    const purpose = /purpose="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    out[purpose] = (out[purpose] ?? 0) + Number(m[2]);
  }
  return found ? out : undefined;
}
