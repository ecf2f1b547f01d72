/**
 * Per-test teardown for suites that start servers inside tests: register a closer with
 * `defer`, and every closer runs (last first) after each test, also when it failed.
 */
import { afterEach } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';

export function useCleanups() {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (closers.length > 0) await closers.pop()?.();
  });
  const defer = (closer: () => Promise<unknown>): void => {
    closers.push(closer);
  };
  /** A fake upstream closed after the test. */
  const fakeUpstream = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream();
    defer(() => upstream.close());
    return upstream;
  };
  return { defer, fakeUpstream };
}
