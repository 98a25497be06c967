import pg from 'pg';
import type { Connector, ConnectorContext, ConnectorFactory, SourceRecord } from '../types.js';
import { Backoff, pause, reasonOf, stateReporter, stoppable, unlessAborted } from './polling.js';
import { pollSchedule, type NextPoll } from './schedule.js';
import { parseDsn, type DsnSettings } from './sql-dsn.js';
import { CURSOR_ALIAS, everyRowStatement, pageStatement, sameValueStatement, sqlSource, type SqlSource } from './sql-statement.js';
import { jsonSafe, sourceTypes } from './sql-values.js';

/**
 * The SQL polling connector (PostgreSQL): on the pipeline's schedule, reads the rows of `table`
 * after the saved position on `cursor_column`, in pages, each page one delivered batch carrying
 * the cursor value it reached, which the runtime saves with the writes. One connection of its own,
 * read-only, with a statement timeout; `conn_max_*` (a pool's settings) do not apply to it.
 */

export interface SqlConnectorLimits {
  /** Rows per page (and per `deliver`). */
  pageSize: number;
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  /** Polls without a schedule come this often. */
  defaultIntervalMs: number;
  maxBackoffMs: number;
}

const DEFAULTS: SqlConnectorLimits = { pageSize: 1_000, statementTimeoutMs: 30_000, connectTimeoutMs: 10_000, defaultIntervalMs: 60_000, maxBackoffMs: 60_000 };

/** `deliver` refused the batch: the pipeline is stopping, and so does the connector. */
class DeliveryRefused extends Error {}

interface SqlSettings {
  dsn: DsnSettings;
  source: SqlSource;
  user: string;
  password: string | null;
  initStatement: string | null;
  nextPoll: NextPoll;
}

export function createSqlConnector(overrides: Partial<SqlConnectorLimits> = {}): ConnectorFactory {
  const limits = { ...DEFAULTS, ...overrides };
  return async (context) => {
    const stopper = stoppable(context.signal);
    const reader = new SqlReader(context, limits, stopper.signal);
    const running = reader.run().catch((error: unknown) => {
      context.log.error({ err: reader.scrub(reasonOf(error)), dataSourceId: context.dataSource.id }, 'SQL connector stopped on an unexpected error');
    });
    const connector: Connector = {
      async stop() {
        stopper.stop();
        // Ending the connection cuts a query in flight short; the loop then sees the abort.
        await reader.disconnect();
        await running;
      },
    };
    return connector;
  };
}

export const sqlConnector: ConnectorFactory = createSqlConnector();

class SqlReader {
  private client: pg.Client | null = null;
  private readonly report;
  private settings: SqlSettings | null = null;
  /** The cursor value of the last delivered batch; `undefined`: from the start. */
  private position: unknown;

  constructor(private readonly context: ConnectorContext, private readonly limits: SqlConnectorLimits, private readonly signal: AbortSignal) {
    this.report = stateReporter(context);
  }

  async run() {
    const settings = readSettings(this.context, this.limits);
    if (typeof settings === 'string') {
      // Nothing to retry until the data source or pipeline is changed (which restarts it).
      this.report({ state: 'RETRYING', message: settings });
      return;
    }
    this.settings = settings;
    const backoff = new Backoff(this.limits.maxBackoffMs);
    let positionRead = false;
    while (!this.signal.aborted) {
      try {
        if (!positionRead) {
          this.position = await this.context.position();
          positionRead = true;
        }
        const client = this.client ?? (await this.connect(settings));
        await this.readAll(client, settings.source);
        this.report({ state: 'RUNNING', message: `reading ${settings.dsn.label}` });
        backoff.reset();
      } catch (error) {
        if (this.signal.aborted || error instanceof DeliveryRefused) break;
        // A fresh connection after any failure: no half-open transaction or cursor is carried on.
        await this.disconnect();
        const wait = backoff.next();
        this.report({ state: 'RETRYING', message: `${settings.dsn.label}: ${this.scrub(reasonOf(error))}; retrying in ${Math.round(wait / 1000)} s` });
        if (!(await pause(wait, this.signal))) break;
        continue;
      }
      // The next poll at the next fire time after this one ended: a poll that overran skips the times it covered.
      const now = new Date();
      if (!(await pause(settings.nextPoll(now).getTime() - now.getTime(), this.signal))) break;
    }
    await this.disconnect();
  }

  async disconnect() {
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }

  /** The message without the password, should any text from the far side ever quote it. */
  scrub(message: string): string {
    const password = this.settings?.password;
    return password ? message.split(password).join('********') : message;
  }

  private async connect(settings: SqlSettings): Promise<pg.Client> {
    const client = new pg.Client({
      host: settings.dsn.host, port: settings.dsn.port, database: settings.dsn.database ?? settings.user, user: settings.user,
      // A function, so that pg never falls back to PGPASSWORD or ~/.pgpass of this process.
      password: async () => settings.password ?? '',
      ssl: settings.dsn.ssl, application_name: 'city-data-platform pipeline', connectionTimeoutMillis: this.limits.connectTimeoutMs,
      keepAlive: true, types: sourceTypes,
    });
    // A connection lost while idle is noticed by the next query; without a listener it would crash the process.
    client.on('error', () => {});
    this.client = client;
    await client.connect();
    await client.query(
      `SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SET statement_timeout = ${Math.round(this.limits.statementTimeoutMs)};` +
      ` SET TIME ZONE 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'`,
    );
    // The operator's own statement (search_path, a role), run in the read-only session as it is.
    if (settings.initStatement) await client.query(settings.initStatement);
    return client;
  }

  /** One poll: page after page until a page is not full (catching up at once rather than at the next fire time). */
  private async readAll(client: pg.Client, source: SqlSource) {
    if (!source.hasCursor) return this.readThroughCursor(client, everyRowStatement(source), [], undefined);
    const pageSize = this.limits.pageSize;
    while (!this.signal.aborted) {
      const after = this.position !== undefined && this.position !== null;
      // One row more than a page: it tells whether the page's last cursor value goes on past the page.
      const { rows } = await client.query(extended(pageStatement(source, after), after ? [pageSize + 1, parameter(this.position)] : [pageSize + 1]));
      if (rows.length <= pageSize) return this.deliver(rows, cursorOf(rows.at(-1)));
      const page = rows.slice(0, pageSize);
      const last = cursorOf(page.at(-1));
      if (!sameValue(cursorOf(rows[pageSize]), last)) {
        await this.deliver(page, last);
      } else if (sameValue(cursorOf(page[0]), last)) {
        // A whole page of one cursor value: every row of it, however many, before moving past it.
        await this.readThroughCursor(client, sameValueStatement(source), [parameter(last)], last);
      } else {
        // The rows of the page's last value wait for the next page, to be delivered together with the rest of them.
        let cut = page.length;
        while (sameValue(cursorOf(page[cut - 1]), last)) cut--;
        await this.deliver(page.slice(0, cut), cursorOf(page[cut - 1]));
      }
    }
  }

  /**
   * The rows of `statement` through a server-side cursor in one read-only transaction, a page
   * per batch; only the last batch moves the position (to `position`): a stop halfway reads
   * them all again, and the writers' keys store each once.
   */
  private async readThroughCursor(client: pg.Client, statement: string, values: unknown[], position: unknown) {
    await client.query('BEGIN READ ONLY');
    try {
      await client.query(extended(`DECLARE pipeline_rows NO SCROLL CURSOR FOR ${statement}`, values));
      let pending: Record<string, unknown>[] | null = null;
      while (!this.signal.aborted) {
        const { rows } = await client.query(`FETCH ${this.limits.pageSize} FROM pipeline_rows`);
        if (pending && pending.length > 0) await this.deliver(pending, rows.length === 0 ? position : undefined);
        if (rows.length === 0) break;
        pending = rows;
      }
    } finally {
      if (this.client === client) await client.query('ROLLBACK').catch(() => {});
    }
  }

  private async deliver(rows: Record<string, unknown>[], position: unknown) {
    if (rows.length === 0) return;
    const receivedAt = new Date();
    const records: SourceRecord[] = rows.map((row) => {
      const { [CURSOR_ALIAS]: _cursor, ...columns } = row;
      return { value: jsonSafe(columns), receivedAt };
    });
    try {
      await unlessAborted(this.context.deliver(position === undefined ? { records } : { records, position }), this.signal);
    } catch (error) {
      throw new DeliveryRefused(reasonOf(error));
    }
    if (this.signal.aborted) throw new DeliveryRefused('stopped');
    if (position !== undefined) this.position = position;
    // A first poll catching up on a large table is running long before it ends.
    if (this.settings) this.report({ state: 'RUNNING', message: `reading ${this.settings.dsn.label}` });
  }
}

/**
 * A query sent as one prepared statement even without parameters: PostgreSQL then refuses a second
 * statement, so a `;` in `where` or `suffix` cannot smuggle one in. (`queryMode` is missing from @types/pg.)
 */
const extended = (text: string, values: unknown[]) => ({ text, values, queryMode: 'extended' }) as pg.QueryConfig;
const cursorOf = (row: Record<string, unknown> | undefined) => jsonSafe(row?.[CURSOR_ALIAS]);
const sameValue = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/** A saved position back as a query parameter: PostgreSQL reads the text as the cursor column's type. */
const parameter = (position: unknown) => (typeof position === 'number' || typeof position === 'string' ? position : JSON.stringify(position));

function readSettings(context: ConnectorContext, limits: SqlConnectorLimits): SqlSettings | string {
  const configuration = context.dataSource.configuration;
  const driver = configuration['driver'];
  if (typeof driver !== 'string' || !/^(postgres|postgresql|pgx)$/i.test(driver)) {
    return `configuration.driver ${JSON.stringify(String(driver ?? '').slice(0, 40))} is not supported: only postgres is`;
  }
  const dsn = parseDsn(configuration['dsn']);
  if (typeof dsn === 'string') return dsn;
  const source = sqlSource(configuration);
  if (typeof source === 'string') return source;
  const nextPoll = pollSchedule(context.schedule, limits.defaultIntervalMs);
  if (typeof nextPoll === 'string') return nextPoll;
  const { user, password, init_statement: initStatement } = configuration;
  return {
    dsn, source, nextPoll,
    user: typeof user === 'string' && user !== '' ? user : dsn.user ?? 'postgres',
    password: typeof password === 'string' && password !== '' ? password : null,
    initStatement: typeof initStatement === 'string' && initStatement.trim() !== '' ? initStatement : null,
  };
}
