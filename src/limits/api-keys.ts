/**
 * Client API keys (API_KEYS_FILE): a JSON array of `{"name", "sha256", "limit"?}`. Only the
 * SHA-256 of each key is stored, so the file grants nothing when read. A presented key
 * (X-API-Key, as the Hiro API names it) is hashed first and then looked up in a Map of hashes:
 * the lookup's timing depends on the hash, which tells an attacker nothing about any key.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const ApiKeySchema = z
  .object({
    name: z.string().min(1).max(100).describe('Who holds the key (logs and docs; never a metric label)'),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be the SHA-256 of the key as 64 hex digits (printf %s "$KEY" | sha256sum)')
      .transform((hex) => hex.toLowerCase()),
    limit: z.number().int().positive().optional().describe("This key's budget per window; rateLimit.keyed.limit when absent"),
  })
  .strict();

export const ApiKeysSchema = z.array(ApiKeySchema).superRefine((keys, ctx) => {
  const seen = new Map<string, number>();
  for (const [index, key] of keys.entries()) {
    const first = seen.get(key.sha256);
    if (first !== undefined) ctx.addIssue({ code: 'custom', message: `the same key hash as entry ${first} ("${keys[first]?.name}")`, path: [index, 'sha256'] });
    else seen.set(key.sha256, index);
  }
});

export type ApiKey = z.infer<typeof ApiKeySchema>;

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export class ApiKeyBook {
  private readonly byHash: ReadonlyMap<string, ApiKey>;

  constructor(keys: readonly ApiKey[]) {
    this.byHash = new Map(keys.map((key) => [key.sha256, key]));
  }

  get size(): number {
    return this.byHash.size;
  }

  /** The key's entry, or undefined for a key that is not in the file. */
  find(presented: string): ApiKey | undefined {
    return this.byHash.get(sha256Hex(presented));
  }
}
