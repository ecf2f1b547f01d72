/**
 * Error bodies in the upstream's own shape (Fastify's default serializer: keys
 * `statusCode, code?, error, message` in that order), so that a client cannot tell
 * whether the proxy or the upstream answered. See upstream-contract §1.3.
 */

const REASON: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export interface ErrorReply {
  status: number;
  body: string;
}

function reply(status: number, message: string, code?: string): ErrorReply {
  const error = REASON[status] ?? 'Error';
  const payload = code === undefined
    ? { statusCode: status, error, message }
    : { statusCode: status, code, error, message };
  return { status, body: JSON.stringify(payload) };
}

/** Ajv schema-validation failure (carries `code`). */
export const validationError = (message: string): ErrorReply => reply(400, message, 'FST_ERR_VALIDATION');

/** `InvalidRequestError` thrown by an upstream handler (no `code`). */
export const badRequest = (message: string): ErrorReply => reply(400, message);

/** A deterministic upstream handler failure (for example a negative block height). */
export const internalError = (message: string): ErrorReply => reply(500, message);

/** The URL could not be decoded; Fastify answers this before routing. */
export const badUrl = (path: string): ErrorReply =>
  reply(400, `'${path}' is not a valid url component`, 'FST_ERR_BAD_URL');

export const methodNotAllowed = (method: string, path: string): ErrorReply =>
  reply(405, `Method ${method} is not allowed on ${path}; this route answers GET and HEAD`);

/** Every upstream failed to connect or answered garbage. */
export const badGateway = (message: string): ErrorReply => reply(502, message);

/** Every upstream timed out. */
export const gatewayTimeout = (message: string): ErrorReply => reply(504, message);

export const serviceUnavailable = (message: string): ErrorReply => reply(503, message);
