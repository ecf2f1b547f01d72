/** Raw HTTP helpers for tests: bodies as Buffers, so byte identity can be asserted. */
export interface RawResponse {
  status: number;
  headers: Headers;
  body: Buffer;
}

export async function fetchRaw(url: string, init: RequestInit = {}): Promise<RawResponse> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

/** The path part of a path-and-query. */
export const pathOf = (pathAndQuery: string): string => pathAndQuery.split('?')[0] ?? pathAndQuery;

/** A GET whose path is sent exactly as given (fetch would normalize `..` away first). */
export async function getLiteralPath(baseUrl: string, path: string): Promise<RawResponse> {
  const { request } = await import('node:http');
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
