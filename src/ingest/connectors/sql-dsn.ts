/**
 * The `dsn` of an SQL data source read into connection settings for `pg`, by this module rather
 * than by `pg`'s own parser: that one reads certificate files named in the DSN from this
 * machine's disk, and where the DSN leaves something out `pg` falls back to this process's PG*
 * environment (PGHOST, PGPASSWORD, ~/.pgpass), which would hand the service's own database or
 * password to whoever configured a data source. Both forms libpq takes are read: a URL
 * (`postgres://host:5432/db?sslmode=require`) and keyword/value (`host=h port=5432 dbname=db`).
 * Credentials are not taken from here: the data source's `user`/`password` members hold them.
 */

export interface DsnSettings {
  host: string;
  port: number;
  database: string | null;
  ssl: false | { rejectUnauthorized: boolean };
  /** `user` written in the DSN (a stored DSN may still hold one); the `user` member wins. */
  user: string | null;
  /** `host:port/database`, for status messages. */
  label: string;
}

const SSL_MODES: Record<string, DsnSettings['ssl']> = {
  disable: false, allow: false, prefer: false,
  require: { rejectUnauthorized: true }, 'verify-ca': { rejectUnauthorized: true }, 'verify-full': { rejectUnauthorized: true },
  'no-verify': { rejectUnauthorized: false },
};

/** Parameters read; any other (sslcert, sslrootcert, options, ...) is refused by name rather than silently ignored. */
const KNOWN = new Set(['host', 'hostaddr', 'port', 'dbname', 'user', 'sslmode', 'connect_timeout', 'application_name']);

export function parseDsn(dsn: unknown): DsnSettings | string {
  if (typeof dsn !== 'string' || dsn.trim() === '') return 'configuration.dsn is missing';
  if (dsn.length > 4096) return 'configuration.dsn is longer than 4096 characters';
  const parameters = /^postgres(?:ql)?:\/\//i.test(dsn) ? urlParameters(dsn) : keywordParameters(dsn);
  if (typeof parameters === 'string') return parameters;
  for (const name of parameters.keys()) {
    if (name === 'password') continue; // taken out of stored DSNs; the `password` member holds it
    if (!KNOWN.has(name)) return `configuration.dsn: the parameter ${JSON.stringify(name.slice(0, 40))} is not supported`;
  }
  const host = parameters.get('host') || parameters.get('hostaddr');
  if (!host) return 'configuration.dsn must name a host';
  if (host.startsWith('/')) return 'configuration.dsn must name a network host (a socket directory is not supported)';
  const port = Number(parameters.get('port') || 5432);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return 'configuration.dsn names a port that is not one';
  const sslmode = (parameters.get('sslmode') || 'disable').toLowerCase();
  const ssl = SSL_MODES[sslmode];
  if (ssl === undefined) return `configuration.dsn: sslmode ${JSON.stringify(sslmode.slice(0, 20))} is not one of ${Object.keys(SSL_MODES).join(', ')}`;
  const database = parameters.get('dbname') || null;
  return { host, port, database, ssl, user: parameters.get('user') || null, label: `${host}:${port}/${database ?? ''}` };
}

function urlParameters(dsn: string): Map<string, string> | string {
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    return 'configuration.dsn is not a valid postgres:// URL';
  }
  const parameters = new Map<string, string>();
  for (const [name, value] of url.searchParams) parameters.set(name.toLowerCase(), value);
  const decoded = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  if (url.hostname) parameters.set('host', decoded(url.hostname).replace(/^\[(.*)\]$/, '$1'));
  if (url.port) parameters.set('port', url.port);
  if (url.pathname.length > 1) parameters.set('dbname', decoded(url.pathname.slice(1)));
  if (url.username) parameters.set('user', decoded(url.username));
  if (url.password) parameters.set('password', '');
  return parameters;
}

/** libpq's keyword/value form: `key=value` pairs apart by spaces, a value in single quotes with \' and \\ inside. */
function keywordParameters(dsn: string): Map<string, string> | string {
  const parameters = new Map<string, string>();
  const pair = /\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))/y;
  let at = 0;
  while (at < dsn.length) {
    if (/^\s*$/.test(dsn.slice(at))) break;
    pair.lastIndex = at;
    const match = pair.exec(dsn);
    if (!match) return 'configuration.dsn is neither a postgres:// URL nor key=value pairs';
    const [, name, quoted, bare] = match;
    parameters.set(name!.toLowerCase(), quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare!);
    at = pair.lastIndex;
  }
  return parameters;
}
