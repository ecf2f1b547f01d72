/**
 * The rate-limit budget shared by every instance that uses the same Redis: one Lua script per
 * charge (EVALSHA through ioredis' defineCommand, so one round trip, atomic), one key per client
 * and window, expiring shortly after its window so nothing accumulates. It has its own
 * connection, so that its commands never queue behind cache traffic, with the same short
 * timeout and no offline queue: a dead Redis rejects at once and the limiter fails open.
 */
import type { Cluster, Redis } from 'ioredis';
import { windowIndex, type Budget, type Charge } from '../limits/budget.js';
import { createRedisClient, type RedisClientOptions } from './redis-store.js';

// KEYS[1]: the client's counter for this window. ARGV: cost, limit, key lifetime (ms).
// Returns {allowed (1/0), used}. A charge that would go over the limit takes nothing.
const TAKE = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local cost = tonumber(ARGV[1])
if used + cost > tonumber(ARGV[2]) then return {0, used} end
used = redis.call('INCRBY', KEYS[1], cost)
if used == cost then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, used}
`;

// Instances' clocks differ a little: a key outlives its window by this much.
const KEY_SLACK_MS = 5_000;

type TakeCommand = (key: string, cost: number, limit: number, ttlMs: number) => Promise<[number, number]>;

export interface RedisBudgetOptions extends RedisClientOptions {
  keyPrefix: string;
  windowMs: number;
}

export class RedisBudget implements Budget {
  private readonly client: Redis | Cluster;
  private readonly takeCommand: TakeCommand;

  constructor(private readonly options: RedisBudgetOptions) {
    this.client = createRedisClient(options);
    // Its failures are reported per request by the limiter (fail open); without a listener
    // ioredis would print every reconnect failure.
    this.client.on('error', () => undefined);
    this.client.defineCommand('rateLimitTake', { numberOfKeys: 1, lua: TAKE });
    const client = this.client as unknown as { rateLimitTake: TakeCommand };
    this.takeCommand = client.rateLimitTake.bind(client);
  }

  async take(client: string, cost: number, limit: number, now: number): Promise<Charge> {
    const window = windowIndex(now, this.options.windowMs);
    const resetAtMs = (window + 1) * this.options.windowMs;
    const key = `${this.options.keyPrefix}:rl:${window}:${client}`;
    const [allowed, used] = await this.takeCommand(key, cost, limit, resetAtMs - now + KEY_SLACK_MS);
    return { allowed: allowed === 1, used: Number(used), resetAtMs };
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
