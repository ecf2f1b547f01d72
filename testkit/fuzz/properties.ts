/**
 * The properties every fuzzed request must keep (issue 8, "Tests"), judged from one case's
 * report (pure):
 *   answers:  the proxy answers, within its own request timeout, on a connection it keeps whole;
 *   no-own-5xx: a 5xx is only the upstream's own answer passed on (the fake upstream gives the
 *             same status for a url it was asked during the case), or the upstream's handler
 *             answer the proxy reproduces for that input (500 for a negative block height);
 *   upstream: every request the upstream received is a canonical route request or an allowed
 *             passthrough path (./upstream-oracle.ts).
 */
import type { CaseReport } from './lane.js';
import { judgeUpstreamRequest, ownRouteAnswers } from './upstream-oracle.js';

export interface Violation {
  /** `framing`: the passthrough lane's (passthrough-framing.ts). */
  property: 'answers' | 'no-own-5xx' | 'upstream' | 'framing';
  /** Groups equal failures: property, input origin and the kind of failure. */
  signature: string;
  detail: string;
}

const header = (value: string | string[] | undefined): string => (Array.isArray(value) ? value.join(', ') : (value ?? '-'));

/** Long inputs (up to 15,000 chars) are cut in messages, with their length. */
export const abbreviate = (text: string, max = 300): string => (text.length <= max ? text : `${text.slice(0, max)}...(${text.length} chars)`);

/** Which family of inputs a request came from: a route, the passthrough, other paths, absolute forms. */
const family = (origin: string): string => (['passthrough', 'other', 'absolute'].includes(origin) ? origin : 'route');

/** Failures that differ only in which route the input was built from are one failure... */
const GENERIC_KINDS = /^(passthrough-[a-z-]+|route-read-upstream|not-origin-form)/;
/** ...except validation ones, which are about one route's rules. */
const kindOf = (kind: string): string => GENERIC_KINDS.exec(kind)?.[1] ?? kind;

export function judgeCase(report: CaseReport): Violation[] {
  const { request, outcome } = report;
  const violations: Violation[] = [];

  if (outcome.kind === 'no-answer') {
    const reason = outcome.error.startsWith('no answer within') ? 'timeout' : (outcome.error.split(':')[0] ?? 'error');
    violations.push({ property: 'answers', signature: `answers:${family(request.origin)}:${reason}`, detail: `${outcome.error} (after ${outcome.ms} ms)` });
  } else {
    const { status, headers, body } = outcome.answer;
    if (status >= 500) {
      // A HEAD answer carries no body to compare.
      const reproducesUpstream = ownRouteAnswers(request.target).some(
        (own) => own.status === status && (request.method === 'HEAD' || own.body === body.toString('utf8')),
      );
      const passedOn = report.upstream.some((exchange) => exchange.status === status);
      if (!reproducesUpstream && !passedOn) {
        const asked = report.upstream.map((e) => `${e.method} ${abbreviate(e.url)} -> ${e.status ?? '?'}`).join('; ') || 'upstream not asked';
        violations.push({
          property: 'no-own-5xx',
          signature: `no-own-5xx:${family(request.origin)}:${status}:${header(headers['x-cache'])}`,
          detail: `proxy answered ${status} (X-Cache ${header(headers['x-cache'])}) ${body.toString('utf8').slice(0, 200)}; ${asked}`,
        });
      }
    }
  }

  for (const exchange of report.upstream) {
    const verdict = judgeUpstreamRequest(exchange.url);
    if (!verdict.ok) {
      violations.push({ property: 'upstream', signature: `upstream:${kindOf(verdict.kind)}`, detail: `${exchange.method} ${abbreviate(verdict.detail, 600)}` });
    }
  }
  return violations;
}

/** One line per violation, with the request, for assertion messages and the fuzz report. */
export function describeCase(report: CaseReport, violations: Violation[]): string {
  const answer = report.outcome.kind === 'answer' ? `${report.outcome.answer.status}` : 'no answer';
  return [
    `${report.request.method} ${abbreviate(JSON.stringify(report.request.target))} (${report.request.origin}) -> ${answer}`,
    ...violations.map((v) => `  [${v.property}] ${v.detail}`),
  ].join('\n');
}
