/**
 * One request from the primary to one worker's private admin listener (loopback), its answer read
 * whole: for the answers the primary combines (purges, /ready, /status.json). Bounded in time and
 * size: a worker that hangs or sends too much is a worker that failed, not a primary that waits.
 */
import { request, type OutgoingHttpHeaders } from 'node:http';
import type { WorkerHttpAnswer } from './combine-admin-answers.js';

export interface WorkerAdminRequest {
  method: string;
  /** The request target as the client sent it (origin-form: checked by the caller). */
  path: string;
  headers: OutgoingHttpHeaders;
  body?: Buffer;
  timeoutMs: number;
}

/** A status report is a few tens of KB; an answer far past that is not one of the admin listener's. */
export const MAX_WORKER_ANSWER_BYTES = 4 * 1024 * 1024;

export function askWorker(adminUrl: string, ask: WorkerAdminRequest): Promise<WorkerHttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers = { ...ask.headers, 'content-length': String(ask.body?.length ?? 0) };
    const sent = request(new URL(ask.path, adminUrl), { method: ask.method, headers, timeout: ask.timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_WORKER_ANSWER_BYTES) {
          res.destroy();
          reject(new Error(`answer larger than ${MAX_WORKER_ANSWER_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    sent.on('timeout', () => sent.destroy(new Error(`no answer within ${ask.timeoutMs} ms`)));
    sent.on('error', reject);
    sent.end(ask.body);
  });
}
