/**
 * The purge channel: a Redis pub/sub channel on which an instance announces a purge, so that
 * every instance sharing the Redis removes the same entries from its own memory tier (Redis
 * itself is purged once, by the instance that was asked). Subscribing takes a connection of
 * its own: a subscribed Redis connection can run no other command.
 */
import { createRedisClient } from './redis-store.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';

export interface PurgeChannelOptions {
  url: string;
  commandTimeoutMs: number;
  channel: string;
  /** Each message as published. */
  onMessage: (message: string) => void;
  telemetry?: Telemetry;
}

export class RedisPurgeChannel {
  private readonly subscriber: ReturnType<typeof createRedisClient>;
  private markSubscribed: () => void = () => {};
  /** Settles once the channel is subscribed (tests wait for it; start-up does not: Redis may be down). */
  readonly subscribed = new Promise<void>((resolve) => (this.markSubscribed = resolve));

  constructor(private readonly options: PurgeChannelOptions) {
    const telemetry = options.telemetry ?? noopTelemetry;
    this.subscriber = createRedisClient({ url: options.url, commandTimeoutMs: options.commandTimeoutMs, autoPipelining: false });
    // Commands do not queue while disconnected, so subscribing waits for each (re)connection;
    // SUBSCRIBE to a channel already subscribed changes nothing.
    this.subscriber.on('ready', () => {
      this.subscriber.subscribe(options.channel).then(
        () => this.markSubscribed(),
        (error: unknown) => telemetry.storeError('redis', 'subscribe', error),
      );
    });
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === options.channel) options.onMessage(message);
    });
    this.subscriber.on('error', (error: unknown) => telemetry.storeError('redis', 'subscriber', error));
  }

  async close(): Promise<void> {
    try {
      await this.subscriber.quit();
    } catch {
      this.subscriber.disconnect();
    }
  }
}
