/**
 * The Grafana dashboards may only ask for metrics the proxy exports, and must show all of them.
 * Every PromQL expression (panel targets and variable queries) is parsed for the metric names
 * it selects and compared with the proxy's own registry. No Prometheus needed: that the queries
 * also return data is proven by `npm run check:dashboards`.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { catalogueSpecs } from '../../src/telemetry/catalogue.js';
import { createTelemetry } from '../../src/telemetry/prometheus-telemetry.js';
import {
  allPanels,
  collectExpressions,
  loadDashboards,
  variableQuery,
  type Dashboard,
  type DashboardExpression,
} from '../../scripts/check-dashboards/dashboards.js';
import { variableToPromql } from '../../scripts/check-dashboards/promql.js';

// ---------------------------------------------------------------------------------------------
// A PromQL scanner that finds selectors, not a full parser
// ---------------------------------------------------------------------------------------------

interface Selector {
  metric: string;
  /** The text between `{` and `}`, empty for a bare metric name. */
  matchers: string;
}

/** Keywords that take a label list in parentheses, which holds label names and no metrics. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** Keywords that are neither functions nor metrics; aggregations may be followed by `by (...)`, not `(`. */
const OTHER_KEYWORDS = new Set([
  ...['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan'],
  ...['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile'],
]);
const IDENT_START = /[a-zA-Z_:]/;
const IDENT_PART = /[a-zA-Z0-9_:]/;

/** Index just past the string literal that opens at `start` (", ' or `, backslash escapes). */
function skipString(expr: string, start: number): number {
  const quote = expr[start];
  let i = start + 1;
  while (i < expr.length && expr[i] !== quote) i += expr[i] === '\\' && quote !== '`' ? 2 : 1;
  return i + 1;
}

/** Index just past the bracket that closes the one at `start`, strings inside skipped. */
function skipGroup(expr: string, start: number, open: string, close: string): number {
  let depth = 0;
  for (let i = start; i < expr.length; i++) {
    const c = expr[i] ?? '';
    if (c === '"' || c === "'" || c === '`') i = skipString(expr, i) - 1;
    else if (c === open) depth += 1;
    else if (c === close && --depth === 0) return i + 1;
  }
  throw new Error(`unbalanced ${open} in: ${expr}`);
}

function skipWhile(expr: string, start: number, pattern: RegExp): number {
  let i = start;
  while (i < expr.length && pattern.test(expr[i] ?? '')) i++;
  return i;
}

/**
 * Every metric selector in a PromQL expression: identifiers that are not functions (followed by
 * `(`), keywords, label names (inside `{}` or a `by (...)` list), string literals, numbers,
 * durations (`[...]`) or Grafana variables.
 */
function selectorsOf(expr: string): Selector[] {
  const selectors: Selector[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i] ?? '';
    if (c === '"' || c === "'" || c === '`') i = skipString(expr, i);
    else if (c === '[') i = skipGroup(expr, i, '[', ']');
    else if (c === '{') {
      // A selector without a metric name, such as {__name__=~"..."}: nothing to check by name.
      i = skipGroup(expr, i, '{', '}');
    } else if (c === '#') i = skipWhile(expr, i, /[^\n]/);
    else if (c === '$') i = expr[i + 1] === '{' ? skipGroup(expr, i + 1, '{', '}') : skipWhile(expr, i + 1, /\w/);
    else if (/[0-9.]/.test(c)) i = skipWhile(expr, i, /[0-9a-zA-Z_.]/);
    else if (IDENT_START.test(c)) {
      const end = skipWhile(expr, i, IDENT_PART);
      const word = expr.slice(i, end);
      const next = skipWhile(expr, end, /\s/);
      i = end;
      if (LABEL_LIST_KEYWORDS.has(word.toLowerCase())) {
        if (expr[next] === '(') i = skipGroup(expr, next, '(', ')');
      } else if (OTHER_KEYWORDS.has(word.toLowerCase()) || expr[next] === '(') {
        // a keyword, or a function / aggregation: its arguments are scanned next
      } else if (expr[next] === '{') {
        i = skipGroup(expr, next, '{', '}');
        selectors.push({ metric: word, matchers: expr.slice(next + 1, i - 1) });
      } else {
        selectors.push({ metric: word, matchers: '' });
      }
    } else i++;
  }
  return selectors;
}

/** PromQL for any dashboard expression: variable queries are Grafana functions first. */
function promqlOf(expression: DashboardExpression): string {
  return expression.kind === 'variable' ? variableToPromql(expression.expr) : expression.expr;
}

// ---------------------------------------------------------------------------------------------
// What the proxy exports
// ---------------------------------------------------------------------------------------------

interface Exported {
  /** Every exported family name, process and Node.js default metrics included. */
  families: Map<string, string>;
  /** The proxy's own families (no default metrics). */
  own: string[];
  /** Own families that carry a `route` label. */
  withRoute: Set<string>;
}

async function exportedMetrics(): Promise<Exported> {
  // The catalogue of a proxy with Redis (the dashboard shows the Redis panels), plus the default
  // metrics as prom-client exports them from a real registry.
  const own = catalogueSpecs({ redis: true });
  const telemetry = createTelemetry({ logger: pino({ level: 'silent' }), redis: true, defaultMetrics: true });
  const defaults = (await telemetry.registry.getMetricsAsJSON()).filter((m) => !m.name.startsWith('stacks_proxy_'));
  const families = new Map([...defaults.map((m) => [m.name, String(m.type)] as const), ...own.map((spec) => [spec.name, spec.type] as const)]);
  return {
    families,
    own: own.map((spec) => spec.name),
    withRoute: new Set(own.filter((spec) => spec.labelNames.includes('route')).map((spec) => spec.name)),
  };
}

const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

/**
 * The family a series name belongs to. A histogram exports only its _bucket, _sum and _count
 * series (a summary also its bare name), so its bare name selects nothing.
 */
function familyOf(name: string, families: Map<string, string>): string | undefined {
  const type = families.get(name);
  if (type !== undefined && type !== 'histogram') return name;
  const base = name.replace(HISTOGRAM_SERIES, '');
  const baseType = families.get(base);
  return base !== name && (baseType === 'histogram' || baseType === 'summary') ? base : undefined;
}

/** `<source>: <metric>` for every metric an expression uses that the proxy does not export. */
function unknownMetrics(expressions: DashboardExpression[], families: Map<string, string>): string[] {
  return expressions.flatMap((expression) =>
    selectorsOf(promqlOf(expression))
      .filter(({ metric }) => familyOf(metric, families) === undefined)
      .map(({ metric }) => `${expression.source}: ${metric}`),
  );
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

const dashboards = loadDashboards();

describe('the PromQL scanner', () => {
  it.each([
    ['rate(stacks_proxy_nope_total{instance=~"$instance"}[$__rate_interval])', ['stacks_proxy_nope_total']],
    ['histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{route=~"x{1}|y"}[5m])))', ['a_bucket']],
    ['sum(rate(a{cache="HIT"}[1m])) / on() group_left() sum without (instance) (b)', ['a', 'b']],
    ['sum(rate(a[1m])) by (route) > bool 0 and ignoring (x) c offset 5m', ['a', 'c']],
    ['label_replace(up, "dst", "$1", "src", "(.*)") + vector(1e3) * inf', ['up']],
    ['count by (instance) (stacks_proxy_http_requests_total)', ['stacks_proxy_http_requests_total']],
  ])('finds the metrics of %s', (expr, metrics) => {
    expect(selectorsOf(expr).map((s) => s.metric)).toEqual(metrics);
  });

  it('turns label_values(selector, label) into a query over the selector only', () => {
    expect(variableToPromql('label_values(m{a="$x"}, route)')).toBe('count by (route) (m{a="$x"})');
    expect(selectorsOf(variableToPromql('label_values(m, instance)')).map((s) => s.metric)).toEqual(['m']);
  });

  it('reports a metric the proxy does not export', async () => {
    const { families } = await exportedMetrics();
    const madeUp: DashboardExpression[] = [
      { source: 'made-up panel', kind: 'target', expr: 'sum(rate(stacks_proxy_nope_total{instance=~"$instance"}[$__rate_interval]))' },
      { source: 'gauge as histogram', kind: 'target', expr: 'rate(stacks_proxy_chain_tip_height_bucket[1m])' },
      { source: 'bare histogram', kind: 'target', expr: 'stacks_proxy_http_request_duration_seconds{cache="HIT"}' },
      { source: 'made-up variable', kind: 'variable', expr: 'label_values(stacks_proxy_nope_info, instance)' },
      { source: 'prefixed default metric', kind: 'target', expr: 'rate(stacks_proxy_process_cpu_seconds_total[1m])' },
      {
        source: 'real ones',
        kind: 'target',
        expr: 'rate(stacks_proxy_http_request_duration_seconds_bucket[1m]) + nodejs_eventloop_lag_p99_seconds + rate(process_cpu_seconds_total[1m]) + stacks_proxy_redis_up',
      },
    ];
    expect(unknownMetrics(madeUp, families)).toEqual([
      'made-up panel: stacks_proxy_nope_total',
      'gauge as histogram: stacks_proxy_chain_tip_height_bucket',
      'bare histogram: stacks_proxy_http_request_duration_seconds',
      'made-up variable: stacks_proxy_nope_info',
      'prefixed default metric: stacks_proxy_process_cpu_seconds_total',
    ]);
  });
});

describe('the Grafana dashboards', () => {
  it('exist', () => {
    expect(dashboards.map(({ dashboard }) => dashboard.uid)).toContain('stacks-proxy');
  });

  describe.each(dashboards.map(({ file, dashboard }) => ({ name: file.split('/').pop(), dashboard })))('$name', ({ dashboard }) => {
    const expressions = collectExpressions(dashboard);
    const panels = allPanels(dashboard).filter((panel) => panel.type !== 'row');
    const targets = expressions.filter((e) => e.kind === 'target');

    it('uses only metrics the proxy exports', async () => {
      const { families } = await exportedMetrics();
      expect(expressions.length).toBeGreaterThan(0);
      expect(unknownMetrics(expressions, families)).toEqual([]);
    });

    it('shows every metric family the proxy defines', async () => {
      const { families, own } = await exportedMetrics();
      const used = new Set(targets.flatMap((e) => selectorsOf(e.expr).map((s) => familyOf(s.metric, families))));
      expect(own.filter((name) => !used.has(name))).toEqual([]);
    });

    it('has the datasource, instance and route variables', () => {
      const variables = dashboard.templating?.list ?? [];
      const byName = (name: string) => variables.find((v) => v.name === name) as (typeof variables)[number] & Record<string, unknown>;
      expect(byName('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
      expect(byName('instance')).toMatchObject({ type: 'query', multi: true, includeAll: true });
      expect(variableQuery(byName('instance'))).toBe('label_values(stacks_proxy_http_requests_total, instance)');
      expect(byName('route')).toMatchObject({ type: 'query', multi: true, includeAll: true });
      expect(variableQuery(byName('route'))).toBe('label_values(stacks_proxy_http_requests_total{instance=~"$instance"}, route)');
    });

    it('gives every panel a title, a description and at least one query', () => {
      const incomplete = panels.filter((p) => !p.title || !p.description || !(p.targets ?? []).some((t) => (t.expr ?? '').trim() !== ''));
      expect(incomplete.map((p) => p.title ?? `panel ${p.id}`)).toEqual([]);
    });

    it('filters every query by $instance', () => {
      expect(targets.filter((e) => !e.expr.includes('$instance')).map((e) => e.source)).toEqual([]);
      const unfiltered = targets.flatMap((e) =>
        selectorsOf(e.expr)
          .filter((s) => !/instance=~"\$instance"/.test(s.matchers))
          .map((s) => `${e.source}: ${s.metric}`),
      );
      expect(unfiltered).toEqual([]);
    });

    it('filters every metric with a route label by $route', async () => {
      const { families, withRoute } = await exportedMetrics();
      expect(withRoute.size).toBeGreaterThan(3); // guards the label lookup itself
      const unfiltered = targets.flatMap((e) =>
        selectorsOf(e.expr)
          .filter((s) => withRoute.has(familyOf(s.metric, families) ?? '') && !/route=~"\$route"/.test(s.matchers))
          .map((s) => `${e.source}: ${s.metric}`),
      );
      expect(unfiltered).toEqual([]);
    });

    it('has unique panel ids and unique query refIds per panel', () => {
      const ids = allPanels(dashboard).map((p) => p.id);
      expect(ids.every((id) => typeof id === 'number')).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
      for (const panel of panels) {
        const refIds = (panel.targets ?? []).map((t) => t.refId);
        expect(new Set(refIds).size, panel.title).toBe(refIds.length);
      }
    });

    it('reads its data through the ${datasource} variable', () => {
      const datasourceOf = (x: unknown) => (x as { datasource?: { uid?: string } }).datasource?.uid;
      const panelsAndTargets = panels.flatMap((p) => [p, ...(p.targets ?? [])]);
      expect(panelsAndTargets.filter((x) => datasourceOf(x) !== '${datasource}').length).toBe(0);
    });
  });

  it('have unique uids', () => {
    const uids = dashboards.map(({ dashboard }: { dashboard: Dashboard }) => dashboard.uid);
    expect(new Set(uids).size).toBe(uids.length);
  });
});
