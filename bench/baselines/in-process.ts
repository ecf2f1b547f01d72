/**
 * Baseline 3: baseline 2's handler served from inside a proxy's own process. The bench starts a
 * proxy with `node --import <this file>`, so this module runs in the proxy's process (before
 * main.ts, and again after its heap relaunch: execve closes the first listener) and listens on
 * BARE_PORT beside the proxy. What it measures is node:http and the same bytes in the proxy's
 * process (its heap, its code, its timers and connections), without the proxy's own work: the
 * proxy's hit against it is that work, it against the standalone baseline 2 is the process.
 *
 * BARE_HEADERS_FILE: a JSON array of [name, value] pairs, the head of one of the proxy's hits,
 * written by the bench once the proxy answers (read at the first request). BARE_REDIS_URL and
 * BARE_KEY: answer with one auto-pipelined ioredis getBuffer of BARE_KEY per request (the Redis
 * tier's baseline); else BARE_BODY (base64) from memory. Nothing is done without BARE_PORT.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { answerFromMap, answerFromRedis, headFromJson } from './bare-handlers.js';

const port = process.env.BARE_PORT;
if (port) {
  // The head the bench writes once the proxy answers: read at the first request that finds it.
  let head: string[] | undefined;
  const headOnceWritten = (): string[] | undefined => {
    try {
      head ??= headFromJson(readFileSync(process.env.BARE_HEADERS_FILE ?? '', 'utf8'));
    } catch {
      // Not written yet.
    }
    return head;
  };
  const redisUrl = process.env.BARE_REDIS_URL;
  const body = Buffer.from(process.env.BARE_BODY ?? '', 'base64');
  // From memory, the head is built once, content-length included, as map-server.ts builds it.
  let withLength: string[] | undefined;
  const wholeHead = (): string[] | undefined => {
    const fixed = headOnceWritten();
    return fixed && (withLength ??= [...fixed, 'content-length', String(body.length)]);
  };
  const handler = redisUrl
    ? answerFromRedis(new Redis(redisUrl, { enableAutoPipelining: true }), process.env.BARE_KEY ?? 'bench:body', headOnceWritten)
    : answerFromMap(body, wholeHead);
  createServer(handler).listen(Number(port), '127.0.0.1');
}
