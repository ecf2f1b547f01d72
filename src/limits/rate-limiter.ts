/**
 * The rate-limit decision for one request: which client it is (its API key, else its
 * address), which budget applies, and whether the budget covers the request's cost.
 *
 * The cost model: a hit costs `hitCost`, a miss `missCost` (misses load the node). Whether a
 * request is a miss is only known after the cache lookup, so a request is charged `hitCost` on
 * admission and, when it must go beyond the memory tier (read-through or passthrough), the
 * difference `missCost - hitCost` before it does; a budget that cannot cover that difference
 * refuses the request with 429 then, before it reaches Redis or the upstream. A refused charge
 * takes nothing from the budget.
 *
 * The headers, as the Hiro API sends them (https://docs.hiro.so/resources/guides/response-headers):
 * lower-case `ratelimit-limit` (the ceiling), `ratelimit-remaining` (units left in the window)
 * and `ratelimit-reset` ("the time when the rate limit window resets (Unix timestamp)", so
 * seconds since the epoch), plus `retry-after` in seconds on a 429.
 */
import type { Clock } from '../clock.js';
import { tooManyRequests, UNKNOWN_API_KEY, type ErrorReply, type FailureReply } from '../errors.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { ApiKeyBook } from './api-keys.js';
import type { Budget, Charge } from './budget.js';
import { clientOf, type TrustedProxies } from './client-identity.js';

export type ClientTier = 'anonymous' | 'keyed';
export type LimitResult = 'allowed' | 'refused' | 'unknown_key';

export interface RateLimitSettings {
  windowMs: number;
  anonymous: { limit: number };
  keyed: { limit: number };
  hitCost: number;
  missCost: number;
}

/** A refusal to send, or null when the budget covered the charge. */
export type MissCharge = FailureReply | null;

/** What one request was granted; its record carries it until the answer is written. */
export interface LimitGrant {
  tier: ClientTier;
  /** Updated when a miss charge refuses the request; counted once, when the answer is written. */
  result: LimitResult;
  /** ratelimit-* name/value pairs for every answer to this request (none when failing open). */
  headers: string[];
  /**
   * Charges the rest of a miss (missCost - hitCost); absent when there is nothing more to
   * charge. Rewrites the ratelimit-remaining value in `answerHeaders` (the record's headers).
   */
  chargeMiss?: (answerHeaders: string[]) => MissCharge | Promise<MissCharge>;
}

export interface Admission {
  grant: LimitGrant;
  /** The answer when the request is refused (429, or 401 for an unknown key). */
  refusal?: ErrorReply & { headers?: readonly string[] };
}

export interface RateLimiterDeps {
  settings: RateLimitSettings;
  keys: ApiKeyBook;
  trustedProxies: TrustedProxies;
  budget: Budget;
  now: Clock;
  telemetry: Telemetry;
}

const REMAINING = 'ratelimit-remaining';

function limitHeaders(limit: number, charge: Charge): string[] {
  return ['ratelimit-limit', String(limit), REMAINING, String(Math.max(0, limit - charge.used)), 'ratelimit-reset', String(Math.ceil(charge.resetAtMs / 1000))];
}

export class RateLimiter {
  private readonly extraMissCost: number;
  private failing = false;

  constructor(private readonly deps: RateLimiterDeps) {
    this.extraMissCost = deps.settings.missCost - deps.settings.hitCost;
  }

  /**
   * `apiKey`: the X-API-Key header, if sent (an empty one is a key too, and unknown).
   * Synchronous with the memory budget; one Redis round trip with the shared one.
   */
  admit(peer: string | undefined, forwardedFor: string | undefined, apiKey: string | undefined): Admission | Promise<Admission> {
    const { settings } = this.deps;
    let tier: ClientTier;
    let client: string;
    let limit: number;
    if (apiKey !== undefined) {
      const key = this.deps.keys.find(apiKey);
      if (!key) return { grant: { tier: 'keyed', result: 'unknown_key', headers: [] }, refusal: UNKNOWN_API_KEY };
      tier = 'keyed';
      client = `key:${key.name}`;
      limit = key.limit ?? settings.keyed.limit;
    } else {
      tier = 'anonymous';
      client = `ip:${clientOf(peer, forwardedFor, this.deps.trustedProxies)}`;
      limit = settings.anonymous.limit;
    }
    const charged = this.take(client, settings.hitCost, limit);
    if (charged instanceof Promise) return charged.then((charge) => this.decide(tier, client, limit, charge));
    return this.decide(tier, client, limit, charged);
  }

  /** The budget's answer; undefined when its store failed and the request passes unlimited. */
  private take(client: string, cost: number, limit: number): Charge | undefined | Promise<Charge | undefined> {
    const taken = this.deps.budget.take(client, cost, limit, this.deps.now());
    if (!(taken instanceof Promise)) return taken;
    return taken.then(
      (charge) => {
        if (this.failing) {
          this.failing = false;
          this.deps.telemetry.rateLimitRecovered();
        }
        return charge;
      },
      (error: unknown) => {
        this.failing = true;
        this.deps.telemetry.rateLimitFailedOpen(error);
        return undefined;
      },
    );
  }

  private decide(tier: ClientTier, client: string, limit: number, charge: Charge | undefined): Admission {
    // Failing open: no budget to describe, nothing more to charge.
    if (!charge) return { grant: { tier, result: 'allowed', headers: [] } };
    const headers = limitHeaders(limit, charge);
    if (!charge.allowed) return { grant: { tier, result: 'refused', headers }, refusal: this.refusal(limit, charge) };
    const grant: LimitGrant = { tier, result: 'allowed', headers };
    if (this.extraMissCost > 0) grant.chargeMiss = (answerHeaders) => this.chargeMiss(grant, client, limit, answerHeaders);
    return { grant };
  }

  private chargeMiss(grant: LimitGrant, client: string, limit: number, answerHeaders: string[]): MissCharge | Promise<MissCharge> {
    const settle = (charge: Charge | undefined): MissCharge => {
      if (!charge) return null;
      const at = answerHeaders.indexOf(REMAINING);
      if (at >= 0) answerHeaders[at + 1] = String(Math.max(0, limit - charge.used));
      if (charge.allowed) return null;
      grant.result = 'refused';
      return this.refusal(limit, charge);
    };
    const charged = this.take(client, this.extraMissCost, limit);
    return charged instanceof Promise ? charged.then(settle) : settle(charged);
  }

  private refusal(limit: number, charge: Charge): FailureReply {
    const seconds = Math.ceil((charge.resetAtMs - this.deps.now()) / 1000);
    const windowSeconds = this.deps.settings.windowMs / 1000;
    return tooManyRequests(`Rate limit exceeded: ${limit} per ${windowSeconds} s for this client; retry after the time in Retry-After`, seconds);
  }
}
