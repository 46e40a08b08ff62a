import pg from 'pg';
import type { Sql } from '../sql/executor.ts';
import type { JobEvent, JobEvents } from '../store.ts';

const CHANNEL = 'backup_service_jobs';
const MAX_BACKOFF_MS = 10_000;

type Listener = (event: JobEvent | { type: 'resync' }) => void;

/**
 * Job notifications between instances through PostgreSQL's LISTEN/NOTIFY: one dedicated
 * connection listens; a lost connection is re-made with backoff, and listeners are told to
 * `resync` (notifications sent meanwhile are lost).
 */
export class PostgresJobEvents implements JobEvents {
  private readonly url: string;
  private readonly sql: Sql;
  private readonly listeners = new Set<Listener>();
  private client: pg.Client | null = null;
  private closed = false;
  private backoffMs = 250;
  private retry: NodeJS.Timeout | undefined;

  constructor(url: string, sql: Sql) {
    this.url = url;
    this.sql = sql;
  }

  /** Connects the listening connection; resolves once it listens (rejects when the first connect fails). */
  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return;
      try {
        this.dispatch(JSON.parse(msg.payload) as JobEvent);
      } catch {
        // not one of ours
      }
    });
    const lost = (): void => {
      if (this.client !== client) return;
      this.client = null;
      client.removeAllListeners('error');
      client.on('error', () => {});
      client.end().catch(() => {});
      this.reconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
    this.backoffMs = 250;
  }

  private reconnect(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => {
      this.start().then(
        () => this.dispatch({ type: 'resync' }),
        () => {
          this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
          this.reconnect();
        },
      );
    }, this.backoffMs);
    this.retry.unref();
  }

  private dispatch(event: JobEvent | { type: 'resync' }): void {
    for (const listener of this.listeners) listener(event);
  }

  async publish(event: JobEvent): Promise<void> {
    await this.sql.get('SELECT pg_notify(?, ?)', [CHANNEL, JSON.stringify(event)]);
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }
}
