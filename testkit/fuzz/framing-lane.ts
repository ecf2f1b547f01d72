/**
 * The passthrough fuzz lane: the framing upstream (../framing-upstream.ts), the real proxy
 * in-process in front of it, and a raw TCP client that writes one case's requests pipelined on
 * one connection and reads until the proxy closes it (the last request says close). One case at
 * a time, so every request the upstream parses during a case belongs to it.
 */
import { connect } from 'node:net';
import { startFramingUpstream, type FramingUpstream } from '../framing-upstream.js';
import { FUZZ_REQUEST_TIMEOUT_MS, startLaneProxy } from './lane.js';
import { parsedLine, wireBytes, type FramingCase, type FramingReport } from './passthrough-framing.js';

export interface FramingLane {
  run(framing: FramingCase): Promise<FramingReport>;
  close(): Promise<void>;
}

/** Writes `bytes` on a new connection; everything received until the server closes it, or the deadline. */
function exchange(port: number, bytes: string, deadlineMs: number): Promise<FramingReport['received']> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const received = () => Buffer.concat(chunks).toString('latin1');
    const timer = setTimeout(() => {
      resolve({ kind: 'timeout', bytes: received() });
      socket.destroy();
    }, deadlineMs);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ kind: 'closed', bytes: received() });
    });
    socket.write(bytes, 'latin1');
  });
}

export async function startFramingLane(): Promise<FramingLane> {
  const upstream: FramingUpstream = await startFramingUpstream();
  const proxy = await startLaneProxy(upstream, { server: { requestTimeoutMs: FUZZ_REQUEST_TIMEOUT_MS } });
  const run = async (framing: FramingCase): Promise<FramingReport> => {
    upstream.reset();
    const received = await exchange(proxy.port, wireBytes(framing), FUZZ_REQUEST_TIMEOUT_MS);
    return {
      case: framing,
      parsed: upstream.clientRequests().map(parsedLine).sort(),
      unparsed: upstream.unparsed.map((u) => u.bytes),
      received,
    };
  };
  const close = async () => {
    await proxy.close();
    await upstream.close();
  };
  return { run, close };
}
