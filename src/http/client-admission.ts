/**
 * A client request's admission by the rate limiter, read from the HTTP request: its peer, its
 * X-Forwarded-For and its X-API-Key. The pipeline admits every request it routes this way.
 *
 * WebSocket upgrades are the one kind of request the pipeline never sees (the server hands them to
 * the passthrough directly): admitUpgrade applies the same budgets to them. Without it, a client
 * over its budget could still open tunnels to the upstream without end. An upgrade is admitted like any other request (its API key, else its address; 401 for an
 * unknown key) and, since every upgrade that is let through reaches the upstream, it is charged
 * a miss, as a passthrough request is. A refusal carries the ratelimit-* headers with its 429;
 * an admitted upgrade's 101 is the upstream's own head, so it carries none.
 */
import type { IncomingMessage } from 'node:http';
import type { ErrorReply } from '../errors.js';
import type { Admission, LimitGrant, MissCharge, RateLimiter } from '../limits/rate-limiter.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** A refusal to write on the socket, with its headers as name/value pairs; null: go on. */
export type UpgradeRefusal = { reply: ErrorReply; headers: readonly string[] } | null;

const headerValue = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** Reads the client's own headers: call it before they are replaced by the ones sent upstream. */
export function admitClient(limiter: RateLimiter, req: IncomingMessage): Admission | Promise<Admission> {
  return limiter.admit(req.socket.remoteAddress, headerValue(req, 'x-forwarded-for'), headerValue(req, 'x-api-key'));
}

/** Admission, then the miss charge; counts the decision once, as the pipeline does. */
export function admitUpgrade(limiter: RateLimiter, telemetry: Telemetry, req: IncomingMessage): UpgradeRefusal | Promise<UpgradeRefusal> {
  const admission = admitClient(limiter, req);
  const afterAdmission = ({ grant, refusal }: Admission): UpgradeRefusal | Promise<UpgradeRefusal> => {
    if (refusal) return decided(telemetry, grant, { reply: refusal, headers: [...(refusal.headers ?? []), ...grant.headers] });
    const charge = grant.chargeMiss?.(grant.headers);
    if (!charge) return decided(telemetry, grant, null);
    const afterCharge = (missRefusal: MissCharge): UpgradeRefusal =>
      decided(telemetry, grant, missRefusal ? { reply: missRefusal, headers: [...missRefusal.headers, ...grant.headers] } : null);
    return charge instanceof Promise ? charge.then(afterCharge) : afterCharge(charge);
  };
  return admission instanceof Promise ? admission.then(afterAdmission) : afterAdmission(admission);
}

/**
 * An upgrade the proxy answers itself (a refused target, a path without WebSockets): admitted and
 * charged as any local answer (hitCost; it never reaches the upstream), so that a flood of them
 * meets the client's budget. Over it, the 429; within it, `reply` with the ratelimit-* headers.
 */
export function admitLocalUpgradeAnswer(
  limiter: RateLimiter,
  telemetry: Telemetry,
  req: IncomingMessage,
  reply: ErrorReply,
): NonNullable<UpgradeRefusal> | Promise<NonNullable<UpgradeRefusal>> {
  const settle = ({ grant, refusal }: Admission): NonNullable<UpgradeRefusal> =>
    decided(telemetry, grant, refusal ? { reply: refusal, headers: [...(refusal.headers ?? []), ...grant.headers] } : { reply, headers: grant.headers });
  const admission = admitClient(limiter, req);
  return admission instanceof Promise ? admission.then(settle) : settle(admission);
}

function decided<Answer extends UpgradeRefusal>(telemetry: Telemetry, grant: LimitGrant, refusal: Answer): Answer {
  telemetry.rateLimitDecided(grant.tier, grant.result);
  return refusal;
}
