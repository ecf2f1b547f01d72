/**
 * Matches a request path as the upstream's router (find-my-way, under Fastify) matches it, over
 * the upstream's whole route table (upstream-routes.ts), and says which of the cached routes it
 * reaches, if any. find-my-way's precedence, segment by segment: a static segment beats a
 * parameter at the same position, a parameter beats a wildcard, and when the preferred branch
 * leads nowhere the next one is tried from that position (so `/extended/v1/tx/mempool` is the
 * upstream's mempool list, never transaction `mempool`, while `/extended/v1/tx/mempoolx` is a
 * transaction id). A path that reaches a route of the upstream the proxy does not cache is no
 * match here: the passthrough forwards it. Like the upstream: case-sensitive, one trailing slash
 * ignored, parameters percent-decoded, and no parameter longer than Fastify's maxParamLength.
 */
import type { RouteSpec } from './route-spec.js';
import { UPSTREAM_GET_ROUTES } from './upstream-routes.js';

export type RouteMatch = { kind: 'match'; route: RouteSpec; params: Record<string, string> } | { kind: 'bad-url' } | { kind: 'none' };

/**
 * Fastify's default `maxParamLength` (the upstream does not change it): its router (find-my-way)
 * finds no route when a decoded parameter is longer, so the upstream answers its unknown-route
 * 404, not a 414 or a 400. The proxy treats such a path as none of its routes likewise, so no
 * path parameter becomes part of a cache key with more than 100 characters.
 */
export const MAX_PARAM_LENGTH = 100;

/** A route's end in the tree: what the caller attached to it, if anything, and its parameter names in path order. */
interface Leaf<T> {
  route: T | undefined;
  names: string[];
}

interface TreeNode<T> {
  statics: Map<string, TreeNode<T>>;
  param: TreeNode<T> | undefined;
  /** A `*` segment: the rest of the path, whatever it is. */
  wildcard: Leaf<T> | undefined;
  leaf: Leaf<T> | undefined;
}

const newNode = <T>(): TreeNode<T> => ({ statics: new Map(), param: undefined, wildcard: undefined, leaf: undefined });

/** The upstream ignores one trailing slash, on its routes and on request paths alike. */
const trimSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

/** Adds a route; parameters of any name share one branch per position, as in find-my-way. */
function insert<T>(root: TreeNode<T>, path: string, route: T | undefined): void {
  let node = root;
  const names: string[] = [];
  for (const segment of trimSlash(path).split('/').slice(1)) {
    if (segment === '*') {
      node.wildcard = { route, names };
      return;
    }
    if (segment.startsWith(':')) {
      names.push(segment.slice(1));
      node.param ??= newNode();
      node = node.param;
      continue;
    }
    let next = node.statics.get(segment);
    if (!next) node.statics.set(segment, (next = newNode()));
    node = next;
  }
  // A cached route replaces the upstream's entry for the same path; the upstream's never replaces a cached one.
  if (route !== undefined || !node.leaf) node.leaf = { route, names };
}

/** Why a lookup stopped early: find-my-way gives up on the whole path, without trying other branches. */
type Abort = 'bad-url' | 'too-long';

/** The route found (its parameter values are then in the `values` given to find), or why none. */
type Found<T> = Leaf<T> | Abort | undefined;

/**
 * Depth first, in find-my-way's order: static child, then parameter, then wildcard. Each tree
 * node is visited at most once per lookup (a node sits at one depth, and a depth is one
 * segment), so a lookup is linear in the path. `values` collects the parameters on the way down.
 */
function find<T>(node: TreeNode<T>, segments: readonly string[], index: number, values: string[]): Found<T> {
  if (index === segments.length) return node.leaf;
  const segment = segments[index] as string;
  const next = node.statics.get(segment);
  if (next) {
    const found = find(next, segments, index + 1, values);
    if (found) return found;
  }
  if (node.param && segment !== '') {
    let value = segment;
    if (segment.includes('%')) {
      try {
        value = decodeURIComponent(segment);
      } catch {
        return 'bad-url';
      }
    }
    if (value.length > MAX_PARAM_LENGTH) return 'too-long';
    values.push(value);
    const found = find(node.param, segments, index + 1, values);
    if (found) return found;
    values.pop();
  }
  return node.wildcard;
}

/** What a path reaches in a tree of attached values (see createPathMatcher). */
export type PathMatch<T> = { kind: 'match'; value: T; params: Record<string, string> } | { kind: 'bad-url' } | { kind: 'none' };

const NONE = { kind: 'none' } as const;
const BAD_URL = { kind: 'bad-url' } as const;

/**
 * The matcher over the upstream's routes (`upstreamRoutes`) with values attached to some of them
 * (`attached`: more routes, or the same paths as the upstream's, which they then take over): a
 * path finds the route the upstream would pick, and is a match only when a value is attached to
 * that route. An upstream route's path never replaces an attached one.
 */
export function createPathMatcher<T>(
  attached: readonly { path: string; value: T }[],
  upstreamRoutes: readonly string[] = UPSTREAM_GET_ROUTES,
): (path: string) => PathMatch<T> {
  const root = newNode<T>();
  for (const path of upstreamRoutes) insert<T>(root, path, undefined);
  for (const { path, value } of attached) insert(root, path, value);
  return (path) => {
    if (!path.startsWith('/')) return NONE;
    const values: string[] = [];
    // Segment 0 is the empty text before the leading `/`.
    const found = find(root, trimSlash(path).split('/'), 1, values);
    if (found === 'bad-url') return BAD_URL;
    if (found === undefined || found === 'too-long' || found.route === undefined) return NONE;
    const params: Record<string, string> = {};
    for (const [i, name] of found.names.entries()) params[name] = values[i] as string;
    return { kind: 'match', value: found.route, params };
  };
}

/**
 * `routes`: the cached routes; `upstreamRoutes`: every route of the upstream, which decides
 * where a path goes (the cached ones are among them).
 */
export function createRouteMatcher(routes: readonly RouteSpec[], upstreamRoutes: readonly string[] = UPSTREAM_GET_ROUTES): (path: string) => RouteMatch {
  const match = createPathMatcher(
    routes.map((route) => ({ path: route.path, value: route })),
    upstreamRoutes,
  );
  return (path) => {
    const found = match(path);
    return found.kind === 'match' ? { kind: 'match', route: found.value, params: found.params } : found;
  };
}
