/**
 * Baseline for the Redis tier: a bare node:http server doing one ioredis `getBuffer` per
 * request and writing the bytes. REDIS_URL, KEY (holding the body), PORT, HOST, and
 * AUTO_PIPELINING (`0`: off; on otherwise, as the proxy's default) so the bench can compare the
 * proxy with the plain one-GET-per-request server the issue names as well as the pipelined one.
 * HEADERS, when set, is a JSON array of [name, value] pairs written instead of the two minimal
 * ones (with content-length from the body): the whole head a hit carries (see map-server.ts).
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { answerFromRedis, headFromJson } from './bare-handlers.js';

const redis = new Redis(process.env.REDIS_URL ?? '', { enableAutoPipelining: process.env.AUTO_PIPELINING !== '0' });
const key = process.env.KEY ?? 'bench:body';
const fixedHeaders: string[] | undefined = process.env.HEADERS ? headFromJson(process.env.HEADERS) : undefined;

createServer(answerFromRedis(redis, key, () => fixedHeaders)).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
