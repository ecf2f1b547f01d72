/** Runs the proxy's own validator for one route, as the read handler does (for validation unit tests). */
import { ROUTE_BY_ID } from '../../src/routes/route-table.js';
import type { RouteId } from '../../src/routes/route-spec.js';
import { validateRequest, type CanonicalRequest, type ValidationOutcome } from '../../src/routes/validate.js';

export function validateRoute(id: RouteId, params: Record<string, string>, query = ''): ValidationOutcome {
  const route = ROUTE_BY_ID.get(id);
  if (!route) throw new Error(`no route ${id}`);
  return validateRequest(route, params, query);
}

/** The canonical request of an outcome that must be one (the test fails otherwise). */
export function requestOf(outcome: ValidationOutcome): CanonicalRequest {
  if (outcome.kind !== 'request') throw new Error(`expected a request, got ${JSON.stringify(outcome)}`);
  return outcome.request;
}
