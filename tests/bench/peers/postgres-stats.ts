import { readFile } from 'node:fs/promises';
import pg from 'pg';

/**
 * PostgreSQL's side of a peer, read from the server itself: the processes whose CPU is the peer's
 * (its database's backends, the server's own processes, the postmaster) and what the peer wrote.
 * Two connections of the benchmark's own: one to the `postgres` database (server-wide views), one
 * to the peer's (its tables' statistics), whose backend is left out of the peer's processes.
 */
export class PostgresStats {
  private constructor(
    private readonly database: string,
    private readonly server: pg.Client,
    private readonly local: pg.Client,
    private readonly ownPids: ReadonlySet<number>,
  ) {}

  static async open(databaseUrl: string): Promise<PostgresStats> {
    const url = new URL(databaseUrl);
    const database = url.pathname.slice(1);
    const serverUrl = new URL(databaseUrl);
    serverUrl.pathname = '/postgres';
    const server = new pg.Client({ connectionString: serverUrl.toString() });
    const local = new pg.Client({ connectionString: databaseUrl });
    await server.connect();
    await local.connect();
    const pids = await Promise.all(
      [server, local].map(async (client) =>
        Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
      ),
    );
    return new PostgresStats(database, server, local, new Set(pids));
  }

  /**
   * The peer's database's backends (client backends, autovacuum and parallel workers), the
   * server's own processes (WAL writer, checkpointer, background writer, …) and the postmaster;
   * not the backends of other databases, nor the benchmark's two.
   */
  async processes(): Promise<number[]> {
    const { rows } = await this.server.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type <> 'client backend'",
      [this.database],
    );
    const pids = rows.map((row) => Number(row.pid)).filter((pid) => !this.ownPids.has(pid));
    const status = await readFile(`/proc/${[...this.ownPids][0]}/status`, 'utf8');
    const postmaster = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
    return [postmaster, ...pids];
  }

  /**
   * Counters before a run; the function it returns reads them again and prints, per step, each
   * table's rows inserted, updated and deleted and its growth; for the load also the transactions
   * committed in the peer's database and the WAL flushes and bytes (server-wide: run on a quiet
   * server). Both readings wait for the server's statistics to settle (a backend reports its
   * transactions up to 10 s later when idle, and later still when busy). The transactions of one
   * conversation are not printed: the peer's background work while they settle would count as its
   * steps'; under load they are a few among tens of thousands.
   */
  async beginWrites(scope: 'conversation' | 'load'): Promise<(steps: number) => Promise<string[]>> {
    const before = await this.settledCounters();
    const tablesBefore = await this.tables();
    return async (steps) => {
      const after = await this.settledCounters();
      const tablesAfter = await this.tables();
      // the benchmark's own statistics read on the peer's database, after the first counters
      const commits = after.commits - before.commits - 1;
      const per = (value: number): string => (value / steps).toFixed(2);
      const lines =
        scope === 'conversation'
          ? []
          : [
              `${per(commits)} transactions committed (reads included), ${per(after.walSyncs - before.walSyncs)} WAL flushes (fdatasync), ${Math.round((after.walBytes - before.walBytes) / steps)} B of WAL`,
            ];
      for (const [table, row] of tablesAfter) {
        const earlier = tablesBefore.get(table) ?? { inserted: 0, updated: 0, deleted: 0, bytes: 0 };
        const inserted = row.inserted - earlier.inserted;
        const updated = row.updated - earlier.updated;
        const deleted = row.deleted - earlier.deleted;
        if (inserted + updated + deleted === 0) continue;
        lines.push(
          `${table}: ${per(inserted)} rows inserted, ${per(updated)} updated, ${per(deleted)} deleted, ${Math.round((row.bytes - earlier.bytes) / steps)} B of table and indexes`,
        );
      }
      return lines;
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.server.end(), this.local.end()].map((ending) => ending.catch(() => undefined)));
  }

  /**
   * The counters once every backend has reported its statistics: an idle backend that reported
   * less than a second before reports again only after PostgreSQL's idle interval (10 s).
   */
  private async settledCounters(): Promise<{ commits: number; walSyncs: number; walBytes: number }> {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    return this.counters();
  }

  private async counters(): Promise<{ commits: number; walSyncs: number; walBytes: number }> {
    const { rows } = await this.server.query<{ commits: string; syncs: string; lsn: string }>(
      `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1) AS commits, (SELECT wal_sync FROM pg_stat_wal) AS syncs, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS lsn`,
      [this.database],
    );
    const row = rows[0]!;
    return { commits: Number(row.commits), walSyncs: Number(row.syncs), walBytes: Number(row.lsn) };
  }

  private async tables(): Promise<Map<string, { inserted: number; updated: number; deleted: number; bytes: number }>> {
    const { rows } = await this.local.query<{
      name: string;
      inserted: string;
      updated: string;
      deleted: string;
      bytes: string;
    }>(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins AS inserted, n_tup_upd AS updated, n_tup_del AS deleted, pg_total_relation_size(relid) AS bytes FROM pg_stat_user_tables ORDER BY 1`,
    );
    return new Map(
      rows.map((row) => [
        row.name,
        {
          inserted: Number(row.inserted),
          updated: Number(row.updated),
          deleted: Number(row.deleted),
          bytes: Number(row.bytes),
        },
      ]),
    );
  }
}
