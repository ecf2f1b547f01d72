/**
 * The admin API's bearer token check. Both sides are hashed (SHA-256) before the constant-time
 * comparison, so neither the token's content nor its length can be learned from timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Returns whether an Authorization header carries `Bearer <token>`. */
export function bearerTokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token);
  return (authorization) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
    // A missing or malformed header still takes one comparison.
    return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null;
  };
}
