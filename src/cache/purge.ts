/**
 * What a purge removes, as a predicate over canonical cache keys (key.ts): keys embed the
 * route id and the canonical upstream path, so "every entry about this transaction" is a
 * question about the key alone. A selector is plain JSON, so one instance can publish it and
 * every instance that shares the Redis applies the same predicate to its memory tier. Each
 * matcher also says how to find its keys in Redis: exactly (deleted as they are), or as SCAN
 * MATCH patterns that cover them (a superset: the predicate decides what is deleted). Surface
 * keys (route families) are found by the subjects their key names (key-subjects.ts), exactly.
 */
import type { RouteId } from '../routes/route-spec.js';
import { ROUTE_BY_ID } from '../routes/route-table.js';
import { KEY_SCHEMA_VERSION } from './key.js';
import { normalBlockRef, normalPrincipal, normalTx, segmentNames, subjectItem, type Subject } from './key-subjects.js';

export type PurgeSelector =
  /** Exact keys (a purge by URL: the keys that request is cached under). */
  | { kind: 'keys'; keys: string[] }
  | { kind: 'route'; route: string }
  /** A lower-case 0x-prefixed transaction id. */
  | { kind: 'tx'; txId: string }
  | { kind: 'principal'; principal: string }
  /** Whatever identifies one block: its refs on /extended/v2/blocks/{ref} (height, hash, index block hash, `latest`) and its burn heights. */
  | { kind: 'block'; refs: string[]; burnHeights: number[] }
  | { kind: 'all' };

export interface PurgeMatcher {
  /** Keys the selector names exactly: deleted as they are, without a SCAN. */
  keys?: string[];
  /** Redis SCAN MATCH patterns whose union covers every other matching key (none: no SCAN). */
  patterns: string[];
  matches(key: string): boolean;
}

/** Glob-special characters in a SCAN MATCH pattern are escaped: ids and principals never hold them, but a key part might. */
export const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** The route id and the rest of a key of this schema version; undefined for any other key. */
function splitKey(base: string, key: string): { id: string; rest: string } | undefined {
  if (!key.startsWith(base)) return undefined;
  const colon = key.indexOf(':', base.length);
  if (colon < 0) return undefined;
  return { id: key.slice(base.length, colon), rest: key.slice(colon + 1) };
}

/** `rest` is `<path>?<query>`: whether `name=value` is one of its query parameters. */
function hasQueryParam(rest: string, name: string, value: string): boolean {
  const mark = rest.indexOf('?');
  if (mark < 0) return false;
  return rest
    .slice(mark + 1)
    .split('&')
    .includes(`${name}=${value}`);
}

/** The ids of a whole tx/multiple list key's `tx_id` (one comma-joined value), lower-case and 0x-prefixed. */
function listedIds(rest: string): string[] {
  const value = /[?&]tx_id=([^&]*)/.exec(rest)?.[1] ?? '';
  return value
    .split(',')
    .map((id) => id.toLowerCase())
    .map((id) => (id.startsWith('0x') ? id : `0x${id}`));
}

const pathOf = (rest: string): string => {
  const mark = rest.indexOf('?');
  return mark < 0 ? rest : rest.slice(0, mark);
};

/**
 * Route ids whose entries live under another name: /tx/{id} keeps one entry per transaction
 * (`tx:`) that tx/multiple shares, and tx/multiple keeps members /tx/{id} cannot serve apart
 * (`tx_list_member:`). Purging either route removes the shared transaction entries.
 */
const KEY_NAMES_OF_ROUTE: Record<string, string[]> = {
  tx_by_id: ['tx_by_id', 'tx'],
  tx_multiple: ['tx_multiple', 'tx', 'tx_list_member'],
};

/**
 * A surface key (surface/plan.ts surfaceKey): `s:<family>:<method>:<tip>:<subjects>:<request>`
 * after the base; none of the parts before the request holds a `:`.
 */
function surfaceParts(base: string, key: string): { family: string; subjects: string } | undefined {
  if (!key.startsWith(`${base}s:`)) return undefined;
  const parts = key.slice(base.length + 2).split(':', 5);
  if (parts.length < 5) return undefined;
  return { family: parts[0] as string, subjects: parts[3] as string };
}

/**
 * Surface entries about any of `subjects`: SCAN patterns (one per subject, a superset: the item
 * might appear in a URL too) and the exact test on the key's subject segment.
 */
function surfaceAbout(base: string, glob: string, subjects: readonly Subject[]): { patterns: string[]; matches: (key: string) => boolean } {
  return {
    patterns: subjects.map((subject) => `${glob}s:*${escapeGlob(subjectItem(subject))}*`),
    matches: (key) => {
      const parts = surfaceParts(base, key);
      return parts !== undefined && subjects.some((subject) => segmentNames(parts.subjects, subject));
    },
  };
}

const defined = <T>(value: T | undefined): value is T => value !== undefined;

// Routes whose canonical path names a principal: /extended/v1/address/<p>/..., v2 addresses, contract events.
const ADDRESS_V1_ROUTES = new Set(['address_stx_balance', 'address_balances', 'address_transactions', 'tx_with_transfers']);

export function purgeMatcher(prefix: string, selector: PurgeSelector): PurgeMatcher {
  const base = `${prefix}:v${KEY_SCHEMA_VERSION}:`;
  const glob = escapeGlob(base);
  switch (selector.kind) {
    case 'all':
      return { patterns: [`${glob}*`], matches: (key) => key.startsWith(base) && !key.endsWith(':lock') };
    case 'keys': {
      const keys = new Set(selector.keys);
      return { keys: [...keys], patterns: [], matches: (key) => keys.has(key) };
    }
    case 'route': {
      // Anything but one of the 13 routes' ids is a surface family id (purge-request.ts takes either; they never coincide): `s:<family>:…`.
      if (!ROUTE_BY_ID.has(selector.route as RouteId)) {
        const family = selector.route;
        return {
          patterns: [`${glob}s:${escapeGlob(family)}:*`],
          matches: (key) => !key.endsWith(':lock') && surfaceParts(base, key)?.family === family,
        };
      }
      const names = KEY_NAMES_OF_ROUTE[selector.route] ?? [selector.route];
      return {
        patterns: names.map((name) => `${glob}${escapeGlob(name)}:*`),
        matches: (key) => {
          const parts = splitKey(base, key);
          return parts !== undefined && names.includes(parts.id) && !key.endsWith(':lock');
        },
      };
    }
    case 'tx': {
      const id = selector.txId;
      const g = escapeGlob(id);
      const surface = surfaceAbout(
        base,
        glob,
        [normalTx(id)].filter(defined).map((value) => ({ kind: 't' as const, value })),
      );
      return {
        patterns: [
          ...surface.patterns,
          `${glob}tx:${g}*`,
          `${glob}tx_list_member:${g}*`,
          `${glob}tx_with_transfers:*/${g}/with_transfers`,
          `${glob}tx_events:*tx_id=${g}*`,
          // Lists with a mixed-case id are kept whole, under the list's own key.
          `${glob}tx_multiple:*`,
        ],
        matches: (key) => {
          const parts = splitKey(base, key);
          if (!parts || key.endsWith(':lock')) return false;
          if (parts.id === 's') return surface.matches(key);
          switch (parts.id) {
            case 'tx':
            case 'tx_list_member':
              return pathOf(parts.rest) === id;
            case 'tx_with_transfers':
              return parts.rest.endsWith(`/${id}/with_transfers`);
            case 'tx_events':
              return hasQueryParam(parts.rest, 'tx_id', id);
            case 'tx_multiple':
              return listedIds(parts.rest).includes(id);
            default:
              return false;
          }
        },
      };
    }
    case 'principal': {
      const p = selector.principal;
      const g = escapeGlob(p);
      const v1 = `/extended/v1/address/${p}/`;
      const surface = surfaceAbout(
        base,
        glob,
        [normalPrincipal(p)].filter(defined).map((value) => ({ kind: 'p' as const, value })),
      );
      return {
        patterns: [
          ...surface.patterns,
          ...[...ADDRESS_V1_ROUTES].map((id) => `${glob}${id}:/extended/v1/address/${g}/*`),
          `${glob}address_transactions_v2:/extended/v2/addresses/${g}/transactions*`,
          `${glob}contract_events:/extended/v1/contract/${g}/events*`,
          `${glob}tx_events:*address=${g}*`,
        ],
        matches: (key) => {
          const parts = splitKey(base, key);
          if (!parts || key.endsWith(':lock')) return false;
          if (parts.id === 's') return surface.matches(key);
          const path = pathOf(parts.rest);
          if (ADDRESS_V1_ROUTES.has(parts.id)) return path.startsWith(v1);
          if (parts.id === 'address_transactions_v2') return path === `/extended/v2/addresses/${p}/transactions`;
          if (parts.id === 'contract_events') return path === `/extended/v1/contract/${p}/events`;
          if (parts.id === 'tx_events') return hasQueryParam(parts.rest, 'address', p);
          return false;
        },
      };
    }
    case 'block': {
      const blockPaths = new Set(selector.refs.map((ref) => `/extended/v2/blocks/${ref}`));
      const burnPaths = new Set(selector.burnHeights.map((h) => `/extended/v1/block/by_burn_block_height/${h}`));
      const keys = new Set([...[...blockPaths].map((path) => `${base}block:${path}`), ...[...burnPaths].map((path) => `${base}block_by_burn_height:${path}`)]);
      // The 13 routes' block entries are exact keys; the surface's (block transactions, signer signatures, v1 lookups) are found by their subject.
      const refs = [...new Set(selector.refs.map(normalBlockRef).filter(defined))];
      const surface = surfaceAbout(
        base,
        glob,
        refs.map((value) => ({ kind: 'b' as const, value })),
      );
      return { keys: [...keys], patterns: surface.patterns, matches: (key) => keys.has(key) || (!key.endsWith(':lock') && surface.matches(key)) };
    }
  }
}
