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
