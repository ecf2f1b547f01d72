/** Evaluates every dashboard expression against Prometheus and reports which return no data. */
import { setTimeout as sleep } from 'node:timers/promises';
import { collectExpressions, DASHBOARD_DIR, loadDashboards, type DashboardExpression } from './dashboards.js';
import { instantQuery, samplesOf } from './prometheus.js';
import { substituteVariables, unresolvedVariable, variableToPromql, variableValues } from './promql.js';

export interface Evaluation {
  expression: DashboardExpression;
  promql: string;
  /** Series returned (1 for a scalar). */
  count: number;
  /** The largest value returned, to show at a glance that a counter moved (NaN when none). */
  max: number;
  /** Why it fails; undefined when it returned data. */
  problem?: string;
}

export interface ExpressionToCheck {
  expression: DashboardExpression;
  /** What its dashboard's variables stand for. */
  values: Record<string, string>;
}

/** Every expression of every dashboard; with several dashboards, sources name theirs. */
export function expressionsToCheck(): ExpressionToCheck[] {
  const dashboards = loadDashboards();
  const expressions = dashboards.flatMap(({ dashboard }) => {
    const values = variableValues(dashboard);
    return collectExpressions(dashboard).map((expression) => ({
      expression: dashboards.length > 1 ? { ...expression, source: `${dashboard.title ?? '?'} / ${expression.source}` } : expression,
      values,
    }));
  });
  if (expressions.length === 0) throw new Error(`no expressions found in ${DASHBOARD_DIR}`);
  return expressions;
}

async function evaluate(prometheusUrl: string, expression: DashboardExpression, values: Record<string, string>): Promise<Evaluation> {
  let promql = substituteVariables(expression.expr, values);
  const fail = (problem: string, count = 0): Evaluation => ({ expression, promql, count, max: Number.NaN, problem });
  if (promql.trim() === '') return fail('empty expression');
  const unresolved = unresolvedVariable(promql);
  if (unresolved) return fail(`unknown variable ${unresolved}`);
  try {
    if (expression.kind === 'variable') promql = variableToPromql(promql);
    const answer = await instantQuery(prometheusUrl, promql);
    if (answer.status !== 'success') return fail(`error: ${answer.error ?? 'unknown'}`);
    const samples = samplesOf(answer);
    if (samples.length === 0) return fail('empty result');
    // A ratio of two zero rates is NaN: Prometheus returns a series, Grafana draws nothing.
    if (samples.every((value) => value === 'NaN')) return fail('only NaN values', samples.length);
    return { expression, promql, count: samples.length, max: Math.max(...samples.map(Number).filter((v) => !Number.isNaN(v))) };
  } catch (error) {
    return fail(`error: ${(error as Error).message}`);
  }
}

/** Failing expressions are asked again a few times while traffic goes on, before they count. */
const RETRIES = 3;
const RETRY_PAUSE_MS = 2_000;

export async function evaluateAll(prometheusUrl: string, expressions: ExpressionToCheck[]): Promise<Evaluation[]> {
  let results = await Promise.all(expressions.map(({ expression, values }) => evaluate(prometheusUrl, expression, values)));
  for (let attempt = 0; attempt < RETRIES && results.some((r) => r.problem); attempt++) {
    await sleep(RETRY_PAUSE_MS);
    results = await Promise.all(
      results.map((result, i) => {
        const input = expressions[i];
        return result.problem && input ? evaluate(prometheusUrl, input.expression, input.values) : result;
      }),
    );
  }
  return results;
}

export function report(results: Evaluation[]): void {
  for (const { expression, promql, count, max, problem } of results) {
    const status = problem ? 'FAIL' : 'ok  ';
    const shown = expression.kind === 'variable' ? `${expression.expr}  ->  ${promql}` : expression.expr;
    const top = Number.isNaN(max) ? '' : max.toPrecision(3);
    process.stdout.write(
      `${status} ${String(count).padStart(3)} series  max ${top.padEnd(9)} ${expression.source}: ${shown}${problem ? `  <- ${problem}` : ''}\n`,
    );
  }
  const failed = results.filter((r) => r.problem);
  if (failed.length > 0) {
    process.stdout.write(`\nFailing expressions:\n${failed.map((r) => `  ${r.expression.source}: ${r.problem}\n    ${r.promql}`).join('\n')}\n`);
  }
}
