/**
 * prom-client resolves and validates a label object on every `inc({ ... })`; a child bound once
 * per label-value combination skips that on the hit path. Label values are bounded (route ids,
 * tiers, upstream origins, statuses), so the map is too.
 */
export function labelChildren<Values extends string[], Child>(bind: (...values: Values) => Child): (...values: Values) => Child {
  const children = new Map<string, Child>();
  return (...values) => {
    // A separator no route id, origin or status contains.
    const key = values.join('\u0000');
    let child = children.get(key);
    if (child === undefined) {
      child = bind(...values);
      children.set(key, child);
    }
    return child;
  };
}
