/**
 * testkit: the tooling that tests, scripts (demo, dashboard check) and the bench share, so none
 * of them reaches into another's folder. It holds the fake Stacks upstream (a real HTTP server
 * replaying the recorded regtest answers, with a chain model and fault injection), the loader of
 * those recordings, a throwaway redis-server launcher, a free-port finder, helpers to wait for
 * and stop child processes, and the proxy configuration callers start it with. Nothing here is
 * shipped: the Docker image leaves the folder out. Helpers only tests use (vitest reporters,
 * the in-process proxy harness, per-test clean-ups) stay in test/support.
 */
export { startFakeUpstream } from './fake-upstream/index.js';
export type { AttachedChannel, FailureMode, FakeUpstream, FakeUpstreamOptions, RecordedRequest } from './fake-upstream/index.js';
export {
  RECORDED,
  findProjectRoot,
  findRecording,
  loadRecordings,
  recordedJson,
  recordingsFile,
  recordingsForPath,
  recordingsMatching,
  splitUrl,
} from './fixtures.js';
export type { RecordedHeaders, Recording } from './fixtures.js';
export { freePort } from './free-port.js';
export { parseRequest, startFramingUpstream, type FramingResponder, type FramingUpstream, type ParsedRequest } from './framing-upstream.js';
export { exited, isAnswering, isPortOpen, stopChild, waitFor, type WaitOptions } from './processes.js';
export { testConfig, type TestConfigOptions } from './proxy-config.js';
export { startRedis, startRedisCluster, startRedisSentinel, type TestRedis, type TestRedisDeployment } from './redis-server.js';
