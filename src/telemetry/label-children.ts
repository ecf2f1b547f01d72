/**
 * One bound thing per label-value combination, resolved without building a string: a tree of
 * Maps, one level per label. prom-client resolves and validates a label object on every
 * `inc({ ... })`; a child or cell bound once per combination skips that on the hot path. Label
 * values are bounded (route ids, tiers, upstream origins, statuses), so the tree is too.
 */

/** Resolves `depth` label values, in label order, to the one cell `create` made for them. */
export function cellTree<Cell>(depth: number, create: (values: string[]) => Cell): (values: string[]) => Cell {
  const root = new Map<string, unknown>();
  return (values) => {
    let node = root;
    for (let i = 0; i < depth - 1; i++) {
      const value = values[i] as string;
      let next = node.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(value, next);
      }
      node = next;
    }
    const last = values[depth - 1] as string;
    let cell = node.get(last) as Cell | undefined;
    if (cell === undefined) {
      cell = create(values.slice());
      node.set(last, cell);
    }
    return cell;
  };
}

/** A prom-client child per label-value combination, bound once (`bind` takes the values in label order). */
export function labelChildren<Values extends string[], Child>(bind: (...values: Values) => Child): (...values: Values) => Child {
  const find = cellTree(bind.length, (values) => bind(...(values as Values)));
  return (...values) => find(values);
}
