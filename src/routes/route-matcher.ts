/**
 * Matches a request path against the route table in one pass: one anchored regex per route,
 * tried in table order (static segments first, as the upstream's router prefers them).
 * Like the upstream: case-sensitive, an optional trailing slash, parameters percent-decoded,
 * and no parameter longer than Fastify's maxParamLength.
 */
import type { RouteSpec } from './route-spec.js';

export type RouteMatch =
  | { kind: 'match'; route: RouteSpec; params: Record<string, string> }
  | { kind: 'bad-url' }
  | { kind: 'none' };

interface CompiledRoute {
  route: RouteSpec;
  pattern: RegExp;
  names: string[];
}

/**
 * Fastify's default `maxParamLength` (the upstream does not change it): its router (find-my-way)
 * finds no route when a decoded parameter is longer, so the upstream answers its unknown-route
 * 404, not a 414 or a 400. The proxy treats such a path as none of its routes likewise, so no
 * path parameter becomes part of a cache key with more than 100 characters.
 */
export const MAX_PARAM_LENGTH = 100;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function compile(route: RouteSpec): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return escapeRegExp(segment);
      names.push(segment.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { route, pattern: new RegExp(`^${source}/?$`), names };
}

export function createRouteMatcher(routes: readonly RouteSpec[]): (path: string) => RouteMatch {
  const compiled = routes.map(compile);
  return (path) => {
    for (const { route, pattern, names } of compiled) {
      const found = pattern.exec(path);
      if (!found) continue;
      const params: Record<string, string> = {};
      // In path order, as find-my-way: a bad escape answers 400 before a later parameter's length counts.
      for (const [index, name] of names.entries()) {
        let value: string;
        try {
          value = decodeURIComponent(found[index + 1] ?? '');
        } catch {
          return { kind: 'bad-url' };
        }
        if (value.length > MAX_PARAM_LENGTH) return { kind: 'none' };
        params[name] = value;
      }
      return { kind: 'match', route, params };
    }
    return { kind: 'none' };
  };
}
