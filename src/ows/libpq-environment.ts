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
  return env;
}
