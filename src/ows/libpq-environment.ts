/**
 * The libpq environment (`PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGPASSWORD`, `PGSSLMODE`)
 * of a PostgreSQL URL. MapServer's workers connect with it, so their mapfiles' CONNECTION strings
 * name nothing of the database and no MapServer error can quote a credential.
 */
export function libpqEnvironmentOf(databaseUrl: string): Record<string, string> {
  const url = new URL(databaseUrl);
  const env: Record<string, string> = {};
  const set = (name: string, value: string | null | undefined) => { if (value) env[name] = value; };
  set('PGHOST', url.searchParams.get('host') ?? decodeURIComponent(url.hostname).replace(/^\[(.*)\]$/, '$1'));
  set('PGPORT', url.searchParams.get('port') ?? url.port);
  set('PGDATABASE', decodeURIComponent(url.pathname.replace(/^\//, '')));
  set('PGUSER', url.searchParams.get('user') ?? decodeURIComponent(url.username));
  set('PGPASSWORD', url.searchParams.get('password') ?? decodeURIComponent(url.password));
  set('PGSSLMODE', url.searchParams.get('sslmode'));
  // Timestamps as UTC text (`2024-05-01 10:00:00+00`): MapServer writes them as `2024-05-01T10:00:00Z`.
  env['PGTZ'] = 'UTC';
  // No parallel workers for MapServer's statements. Its pages (`... WHERE ST_Intersects(geom, <bbox>)
  // LIMIT 101`) are costed so high per row that a parallel scan looks cheaper by a hair, and launching
  // the worker process took 16 ms of a statement that runs in 0.2 ms without it (EXPLAIN ANALYZE of a
  // WFS GetFeature COUNT=100 on 100,000 trees): 14 of the 20 ms of CPU a request cost in all.
  env['PGOPTIONS'] = [url.searchParams.get('options'), '-c max_parallel_workers_per_gather=0'].filter(Boolean).join(' ');
  return env;
}
