/**
 * The per-upstream circuit breaker (src/upstream/breaker.ts). It is pure: time is an argument,
 * so every case states the exact instant it asks about.
 */
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/upstream/breaker.js';

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
