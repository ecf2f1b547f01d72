/**
 * The proxy's own reads (the warm-up of a new block, block-warmer.ts): a URL planned exactly as
 * a client's GET of it without credentials would be (request-target.ts decides it, then the 13
 * routes, then the route families of the wider read surface, in the pipeline's order), read
 * through the one read path, without a response and without a rate-limit charge.
 */
import type { ReadDispatcher } from '../http/read-dispatch.js';
import type { Prefetch } from '../http/read-handler.js';
import { decideTarget } from '../http/request-target.js';
import type { SurfaceDispatcher } from '../http/surface-dispatch.js';
import type { OwnRead } from './block-warmer.js';

export function createOwnReads(parts: { reads: ReadDispatcher; surface?: SurfaceDispatcher }): OwnRead {
  return (url: string): Prefetch | undefined => {
    const target = decideTarget(url);
    if (target.kind !== 'target') return undefined;
    const planned = parts.reads.prefetch(target);
    if (planned === 'uncached') return undefined;
    return planned ?? parts.surface?.prefetch(target);
  };
}
