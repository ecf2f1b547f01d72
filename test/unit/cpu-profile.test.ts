import { describe, expect, it } from 'vitest';
import { categoryOf, perRequest, type CpuProfile } from '../../bench/lib/cpu-profile.js';

describe('bench:profile: a CPU profile as µs per request per part', () => {
  it("names node modules, packages, the proxy's directories and V8's entries", () => {
    expect(categoryOf('parserOnIncoming', 'node:_http_server')).toBe('node: http');
    expect(categoryOf('onwrite', 'node:internal/streams/writable')).toBe('node: streams');
    expect(categoryOf('emit', 'node:events')).toBe('node: events');
    expect(categoryOf('returnReply', 'file:///w/node_modules/ioredis/built/DataHandler.js')).toBe('ioredis');
    expect(categoryOf('x', 'file:///w/node_modules/@scope/pkg/lib/a.js')).toBe('@scope/pkg');
    expect(categoryOf('sendResult', 'file:///w/dist/src/http/respond.js')).toBe('proxy: http');
    expect(categoryOf('main', 'file:///w/dist/src/main.js')).toBe('proxy: src');
    expect(categoryOf('handler', 'file:///w/dist/bench/baselines/map-server.js')).toBe('bench: baselines/map-server.js');
    expect(categoryOf('(garbage collector)', '')).toBe('(garbage collector)');
    expect(categoryOf('writev', '')).toBe('native: writev');
  });

  it('gives each sample its time, per request, and leaves idle out of the busy total', () => {
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(idle)', url: '' } },
        { id: 2, callFrame: { functionName: 'writev', url: '' } },
        { id: 3, callFrame: { functionName: 'sendResult', url: 'file:///w/dist/src/http/respond.js' } },
        { id: 4, callFrame: { functionName: 'writeHead', url: 'file:///w/dist/src/http/respond.js' } },
      ],
      samples: [1, 2, 3, 4, 2],
      timeDeltas: [1000, 30, 10, 20, 50],
    };
    const { busyMicros, byCategory } = perRequest(profile, 10);
    expect(busyMicros).toBeCloseTo(11);
    expect(byCategory.get('native: writev')).toBeCloseTo(8);
    expect(byCategory.get('proxy: http')).toBeCloseTo(3);
    expect(byCategory.has('(idle)')).toBe(false);
  });
});
