/** Reads counters from a proxy's /metrics (Prometheus text), summed over the series that match. */
export async function scrape(adminUrl: string): Promise<string> {
  return (await fetch(`${adminUrl}/metrics`)).text();
}

/** Sum of `name`'s series whose labels include every `labels` pair. */
export function sumSeries(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Values of one label of `name`, with the summed count of each. */
export function byLabel(text: string, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  const pattern = new RegExp(`${label}="([^"]*)"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const value = pattern.exec(line)?.[1];
    if (value !== undefined) out[value] = (out[value] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}
