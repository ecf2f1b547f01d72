/** From a Grafana query to a Prometheus query: its variables filled in, its functions translated. */
import type { Dashboard } from './dashboards.js';

/**
 * What Grafana would put in place of its variables. `.*` is what "All" sends for the dashboard
 * variables (their allValue); 1m holds many 1 s scrapes, as $__rate_interval is meant to.
 */
export function substituteVariables(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (whole, a?: string, b?: string, c?: string) => {
    const name = a ?? b ?? c ?? '';
    return values[name] ?? whole;
  });
}

export function unresolvedVariable(expr: string): string | undefined {
  return /\$\{?\w+\}?|\[\[\w+\]\]/.exec(expr)?.[0];
}

export function variableValues(dashboard: Dashboard): Record<string, string> {
  const values: Record<string, string> = { __rate_interval: '1m', __interval: '1m', __range: '5m' };
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type === 'query' || variable.type === 'custom') values[variable.name] = '.*';
  }
  return values;
}

/**
 * Grafana's variable functions are not PromQL. `label_values(selector, label)` lists the values
 * of `label` on the series of `selector`: `count by (label) (selector)` asks Prometheus exactly
 * that, and its series are the values the variable would offer.
 */
export function variableToPromql(query: string): string {
  const text = query.trim();
  const labelValues = /^label_values\(\s*(?:(.*),\s*)?(\w+)\s*\)$/s.exec(text);
  if (labelValues) {
    const [, selector, label = ''] = labelValues;
    return `count by (${label}) (${selector?.trim() || `{${label}=~".+"}`})`;
  }
  const queryResult = /^query_result\((.*)\)$/s.exec(text);
  if (queryResult) return queryResult[1] ?? '';
  throw new Error(`unsupported variable query: ${text}`);
}
