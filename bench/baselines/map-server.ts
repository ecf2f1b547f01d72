/**
 * Baseline: a bare node:http server answering the same bytes from a Map (the ceiling for Node
 * on this machine). BODY is the body, base64; PORT and HOST as for the proxy. HEADERS, when set,
 * is a JSON array of [name, value] pairs sent instead of the two minimal ones: the memory-hit
 * scenario passes the whole head of one of the proxy's hits, so that baseline writes the same
 * response bytes a hit does and the ratio shows the proxy's own work, not the headers the
 * upstream's answer requires (ETag, Cache-Control, CORS, X-API-Version, ...). ENTRIES, when set,
 * holds that many keys (/x/0 to /x/<ENTRIES-1>, each the same body) besides /x: the baseline of a
 * hit among as many cached entries (bench/scenarios/hit-scaling.ts).
 */
import { createServer } from 'node:http';
import { answerFromMap, headFromJson, minimalHead } from './bare-handlers.js';

const body = Buffer.from(process.env.BODY ?? '', 'base64');
const headers: string[] = process.env.HEADERS ? [...headFromJson(process.env.HEADERS), 'content-length', String(body.length)] : minimalHead(body.length);

createServer(answerFromMap(body, () => headers, Number(process.env.ENTRIES ?? 0))).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
