/**
 * Matches a request path against the route table in one pass: one anchored regex per route,
 * tried in table order (static segments first, as the upstream's router prefers them).
 * Like the upstream: case-sensitive, an optional trailing slash, parameters percent-decoded.
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
      try {
        names.forEach((name, index) => {
          params[name] = decodeURIComponent(found[index + 1] ?? '');
        });
      } catch {
        return { kind: 'bad-url' };
      }
      return { kind: 'match', route, params };
    }
    return { kind: 'none' };
  };
}
