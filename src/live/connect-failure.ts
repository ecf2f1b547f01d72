/**
 * Why an upstream WebSocket did not open, in words an operator reads on the status page and in
 * the log ("upgrade refused 404", "connection failed ECONNREFUSED"). Pure. The upstream chose
 * the answer, so only its status code and a bounded error code or message are kept.
 */

import { cutText } from '../cut-text.js';

export interface ConnectFailure {
  /** refused: the upstream answered the upgrade with something other than 101; failed: no answer (connect error, reset, timeout). */
  kind: 'refused' | 'failed';
  reason: string;
}

const MAX_DETAIL_CHARS = 120;

const cut = (text: string): string => cutText(text, MAX_DETAIL_CHARS);

/** The upstream answered the upgrade with `status` (404: no WebSocket served; 401/403: a gateway refusing it). */
export function refusedWith(status: number): ConnectFailure {
  return { kind: 'refused', reason: `upgrade refused ${status}` };
}

/** The attempt ended without an answer: the error's code (ECONNREFUSED, ECONNRESET) or else its message. */
export function failedWith(error: unknown): ConnectFailure {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const detail = typeof code === 'string' ? code : typeof message === 'string' && message !== '' ? message : String(error);
  return { kind: 'failed', reason: `connection failed ${cut(detail)}` };
}

/**
 * socket.io-client's connect_error: a TransportError whose `description` is the `ws` error
 * event. ws words a non-101 answer "Unexpected server response: <status>" (websocket.js), and
 * socket.io-client passes on nothing else of it; any other failure carries the underlying error.
 */
export function socketIoFailure(error: unknown): ConnectFailure {
  const description = (error as { description?: { message?: unknown; error?: unknown } } | null)?.description;
  const refused = typeof description?.message === 'string' ? /^Unexpected server response: (\d{3})$/.exec(description.message) : null;
  if (refused) return refusedWith(Number(refused[1]));
  return failedWith(description?.error ?? description ?? error);
}
