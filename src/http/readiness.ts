/**
 * Whether the proxy can serve (/ready), and when it cannot, why: from the first second, a
 * proxy whose upstreams never answered says what each one's last attempt met (a refused
 * connection, a timeout, a 401 for a missing API key), not just that no tip is known.
 */
import type { UpstreamStatus } from '../upstream/client.js';
import type { Readiness } from './own-endpoints.js';

export interface ReadinessInputs {
  shuttingDown: boolean;
  tip: { height: number } | undefined;
  upstreams: UpstreamStatus[];
}

/** One line per upstream: its last error (named by its origin once), or that it has not failed (yet). */
function causes(upstreams: readonly UpstreamStatus[]): string {
  return upstreams
    .map((u) =>
      !u.lastError ? `${u.origin}: no answer yet` : u.lastError.message.includes(u.origin) ? u.lastError.message : `${u.origin}: ${u.lastError.message}`,
    )
    .join('; ');
}

export function judgeReadiness({ shuttingDown, tip, upstreams }: ReadinessInputs): Readiness {
  if (shuttingDown) return { ready: false, reason: 'shutting down' };
  if (!tip) return { ready: false, reason: `chain tip not known yet (${causes(upstreams)})`, details: { upstreams } };
  if (!upstreams.some((u) => u.usable)) return { ready: false, reason: `no healthy upstream (${causes(upstreams)})`, details: { upstreams } };
  return { ready: true, details: { tipHeight: tip.height, upstreams } };
}
