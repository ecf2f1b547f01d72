/**
 * The per-upstream circuit breaker (src/upstream/breaker.ts). It is pure: time is an argument,
 * so every case states the exact instant it asks about. Also the bounded list of the failures
 * that opened it (recent-failures.ts), and how the health owner hands them to telemetry.
 */
import { describe, expect, it } from 'vitest';
import { noopTelemetry, type BreakerFailure, type Telemetry } from '../../src/telemetry/telemetry.js';
import { CircuitBreaker } from '../../src/upstream/breaker.js';
import { UpstreamHealth } from '../../src/upstream/health.js';
import { MAX_FAILURE_MESSAGE_CHARS, RecentFailures } from '../../src/upstream/recent-failures.js';

const THRESHOLD = 3;
const COOLDOWN_MS = 1_000;
const T0 = 1_700_000_000_000;

function breaker(): CircuitBreaker {
  return new CircuitBreaker({ failureThreshold: THRESHOLD, cooldownMs: COOLDOWN_MS });
}

/** A breaker opened at `at` by THRESHOLD consecutive failures. */
function openedAt(at: number): CircuitBreaker {
  const b = breaker();
  for (let i = 0; i < THRESHOLD; i++) b.onFailure(at);
  return b;
}

describe('circuit breaker', () => {
  it('starts closed and lets every request through', () => {
    const b = breaker();
    expect(b.state(T0)).toBe('closed');
    expect(b.tryAcquire(T0)).toBe(true);
    expect(b.tryAcquire(T0)).toBe(true);
  });

  it('stays closed below the threshold of consecutive failures', () => {
    const b = breaker();
    expect(b.onFailure(T0)).toBe(false);
    expect(b.onFailure(T0)).toBe(false);
    expect(b.state(T0)).toBe('closed');
    expect(b.tryAcquire(T0)).toBe(true);
  });

  it('opens on the threshold-th consecutive failure and refuses requests during the cool-down', () => {
    const b = breaker();
    expect(b.onFailure(T0)).toBe(false);
    expect(b.onFailure(T0)).toBe(false);
    expect(b.onFailure(T0)).toBe(true);
    expect(b.state(T0)).toBe('open');
    expect(b.tryAcquire(T0)).toBe(false);
    expect(b.tryAcquire(T0 + COOLDOWN_MS - 1)).toBe(false);
    expect(b.state(T0 + COOLDOWN_MS - 1)).toBe('open');
  });

  it('counts only consecutive failures: a success in between starts the count again', () => {
    const b = breaker();
    b.onFailure(T0);
    b.onFailure(T0);
    expect(b.onSuccess()).toBe(false);
    expect(b.onFailure(T0)).toBe(false);
    expect(b.onFailure(T0)).toBe(false);
    expect(b.state(T0)).toBe('closed');
    expect(b.onFailure(T0)).toBe(true);
  });

  it('turns half-open exactly when the cool-down has passed and lets one trial through at a time', () => {
    const b = openedAt(T0);
    const later = T0 + COOLDOWN_MS;
    expect(b.state(later)).toBe('half_open');
    expect(b.tryAcquire(later)).toBe(true);
    expect(b.tryAcquire(later)).toBe(false);
    expect(b.tryAcquire(later + 10 * COOLDOWN_MS)).toBe(false);
  });

  it('frees the trial slot when the acquired request never left (release)', () => {
    const b = openedAt(T0);
    const later = T0 + COOLDOWN_MS;
    expect(b.tryAcquire(later)).toBe(true);
    b.release();
    expect(b.tryAcquire(later)).toBe(true);
    expect(b.tryAcquire(later)).toBe(false);
  });

  it('closes on a successful trial, and reports that it closed only once', () => {
    const b = openedAt(T0);
    expect(b.tryAcquire(T0 + COOLDOWN_MS)).toBe(true);
    expect(b.onSuccess()).toBe(true);
    expect(b.state(T0 + COOLDOWN_MS)).toBe('closed');
    expect(b.tryAcquire(T0 + COOLDOWN_MS)).toBe(true);
    expect(b.tryAcquire(T0 + COOLDOWN_MS)).toBe(true);
    expect(b.onSuccess()).toBe(false);
  });

  it('reopens on a failed trial with a new cool-down from the failure, without reporting a new opening', () => {
    const b = openedAt(T0);
    const trialAt = T0 + COOLDOWN_MS + 500;
    expect(b.tryAcquire(trialAt)).toBe(true);
    expect(b.onFailure(trialAt)).toBe(false);
    expect(b.state(trialAt)).toBe('open');
    expect(b.state(trialAt + COOLDOWN_MS - 1)).toBe('open');
    expect(b.tryAcquire(trialAt + COOLDOWN_MS - 1)).toBe(false);
    expect(b.state(trialAt + COOLDOWN_MS)).toBe('half_open');
    expect(b.tryAcquire(trialAt + COOLDOWN_MS)).toBe(true);
  });

  it('needs the full threshold again after it closed', () => {
    const b = openedAt(T0);
    b.tryAcquire(T0 + COOLDOWN_MS);
    b.onSuccess();
    expect(b.onFailure(T0 + COOLDOWN_MS)).toBe(false);
    expect(b.onFailure(T0 + COOLDOWN_MS)).toBe(false);
    expect(b.state(T0 + COOLDOWN_MS)).toBe('closed');
    expect(b.onFailure(T0 + COOLDOWN_MS)).toBe(true);
  });

  it('with a threshold of 1, the first failure opens it', () => {
    const b = new CircuitBreaker({ failureThreshold: 1, cooldownMs: COOLDOWN_MS });
    expect(b.onFailure(T0)).toBe(true);
    expect(b.state(T0)).toBe('open');
  });
});

describe('recent failures (src/upstream/recent-failures.ts)', () => {
  const failure = (n: number) => ({ kind: 'timeout', route: `route_${n}`, message: `failure ${n}` });

  it('keeps the newest `capacity` failures, oldest first, each with its age at the reading', () => {
    const recent = new RecentFailures(3);
    for (let n = 1; n <= 5; n++) recent.add(failure(n), T0 + n * 100);
    expect(recent.size).toBe(3);
    expect(recent.list(T0 + 1_000)).toEqual([
      { ...failure(3), ageMs: 700 },
      { ...failure(4), ageMs: 600 },
      { ...failure(5), ageMs: 500 },
    ]);
  });

  it('forgets every failure on a success, and starts over from the next one', () => {
    const recent = new RecentFailures(3);
    for (let n = 1; n <= 4; n++) recent.add(failure(n), T0);
    recent.clear();
    expect(recent.list(T0)).toEqual([]);
    recent.add(failure(9), T0);
    expect(recent.list(T0).map((f) => f.message)).toEqual(['failure 9']);
  });

  it('cuts every text to MAX_FAILURE_MESSAGE_CHARS however long an upstream made it', () => {
    const recent = new RecentFailures(1);
    recent.add({ kind: 'k'.repeat(5_000), route: 'r'.repeat(5_000), message: 'm'.repeat(100_000) }, T0);
    const [kept] = recent.list(T0);
    for (const text of [kept?.kind, kept?.route, kept?.message]) expect(text?.length).toBe(MAX_FAILURE_MESSAGE_CHARS);
    expect(kept?.message.endsWith('…')).toBe(true);
  });
});

describe('the health owner names the failures that opened a breaker', () => {
  function healthWithEvents(clock: { now: number }) {
    const events: Array<{ upstream: string; state: string; failures?: readonly BreakerFailure[] }> = [];
    const telemetry: Telemetry = Object.create(noopTelemetry, {
      breakerChanged: { value: (upstream: string, state: string, failures?: readonly BreakerFailure[]) => events.push({ upstream, state, failures }) },
    }) as Telemetry;
    const health = new UpstreamHealth(['http://a'], { failureThreshold: THRESHOLD, cooldownMs: COOLDOWN_MS, maxLagBlocks: 3 }, () => clock.now, telemetry);
    return { health, events };
  }

  it('gives the opening event the failures in a row since the last success, and shows them in status()', () => {
    const clock = { now: T0 };
    const { health, events } = healthWithEvents(clock);
    health.recordFailure('http://a', { kind: 'connect', route: 'block', message: 'before the success' });
    health.recordSuccess('http://a');
    health.recordFailure('http://a', { kind: 'timeout', route: 'block', message: 'timeout from http://a' });
    clock.now += 50;
    health.recordFailure('http://a', { kind: '5xx', route: 'tx_by_id', message: 'status 502 from http://a' });
    clock.now += 50;
    health.recordFailure('http://a', { kind: 'invalid', route: 'chain_tip', message: 'http://a answered 401 to chain_tip' });
    expect(events).toEqual([
      {
        upstream: 'http://a',
        state: 'open',
        failures: [
          { kind: 'timeout', route: 'block', message: 'timeout from http://a', ageMs: 100 },
          { kind: '5xx', route: 'tx_by_id', message: 'status 502 from http://a', ageMs: 50 },
          { kind: 'invalid', route: 'chain_tip', message: 'http://a answered 401 to chain_tip', ageMs: 0 },
        ],
      },
    ]);
    expect(health.status()[0]?.recentFailures.map((f) => f.kind)).toEqual(['timeout', '5xx', 'invalid']);
  });

  it('keeps them while a good health check cannot close the breaker, and forgets them when a success closes it', () => {
    const clock = { now: T0 };
    const { health } = healthWithEvents(clock);
    for (let i = 0; i < THRESHOLD; i++) health.recordFailure('http://a', { kind: 'reset', route: 'block', message: `reset ${i}` });
    health.recordSuccess('http://a', { healthCheck: true }); // open: does not count
    expect(health.status()[0]?.recentFailures).toHaveLength(THRESHOLD);
    clock.now += COOLDOWN_MS;
    health.recordSuccess('http://a', { healthCheck: true });
    expect(health.status()[0]).toMatchObject({ breaker: 'closed', recentFailures: [] });
  });
});
