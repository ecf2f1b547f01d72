/** The Grafana dashboards as the check reads them, and every PromQL expression they run. */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/paths.js';

export interface DashboardTarget {
  refId?: string;
  expr?: string;
}

export interface DashboardPanel {
  id?: number;
  type?: string;
  title?: string;
  description?: string;
  targets?: DashboardTarget[];
  /** Panels of a collapsed row live inside it. */
  panels?: DashboardPanel[];
}

export interface DashboardVariable {
  name: string;
  type: string;
  /** Prometheus variable queries are a string, or `{ query }` once Grafana has migrated them. */
  query?: string | { query?: string };
}

export interface Dashboard {
  uid?: string;
  title?: string;
  panels?: DashboardPanel[];
  templating?: { list?: DashboardVariable[] };
}

export interface DashboardExpression {
  /** Where it comes from: a panel title, or `variable <name>`. */
  source: string;
  kind: 'target' | 'variable';
  /** As written in the dashboard. */
  expr: string;
}

export const DASHBOARD_DIR = join(projectRoot(), 'grafana', 'dashboards');

export function loadDashboards(dir = DASHBOARD_DIR): { file: string; dashboard: Dashboard }[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({ file: join(dir, name), dashboard: JSON.parse(readFileSync(join(dir, name), 'utf8')) as Dashboard }));
}

/** Every panel, rows and the panels nested in collapsed rows included. */
export function allPanels(dashboard: Dashboard): DashboardPanel[] {
  const walk = (panels: DashboardPanel[] = []): DashboardPanel[] => panels.flatMap((p) => [p, ...walk(p.panels)]);
  return walk(dashboard.panels);
}

export function variableQuery(variable: DashboardVariable): string | undefined {
  return typeof variable.query === 'string' ? variable.query : variable.query?.query;
}

/** Every PromQL expression a dashboard runs: panel targets and query-variable queries. */
export function collectExpressions(dashboard: Dashboard): DashboardExpression[] {
  const targets = allPanels(dashboard).flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      source: `${panel.title ?? `panel ${panel.id ?? '?'}`}${(panel.targets?.length ?? 0) > 1 ? ` [${target.refId ?? '?'}]` : ''}`,
      kind: 'target' as const,
      expr: target.expr ?? '',
    })),
  );
  const variables = (dashboard.templating?.list ?? [])
    .filter((variable) => variable.type === 'query')
    .map((variable) => ({ source: `variable ${variable.name}`, kind: 'variable' as const, expr: variableQuery(variable) ?? '' }));
  return [...targets, ...variables];
}
