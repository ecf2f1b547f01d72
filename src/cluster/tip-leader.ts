/**
 * Which worker is the tip leader (the one that polls the upstreams' tip on the interval and follows
 * the push feed; the others poll when it has news). The leader stays the leader while it is ready:
 * a leader is never demoted, so no worker ever has to stop its push feed, and a replacement
 * worker (a higher id) does not take over. When the leader is gone, the lowest ready worker id leads.
 */
export function chooseTipLeader(current: number | undefined, ready: Iterable<number>): number | undefined {
  const ids = [...ready];
  if (current !== undefined && ids.includes(current)) return current;
  return ids.length === 0 ? undefined : Math.min(...ids);
}
