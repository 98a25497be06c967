/**
 * The SELECT an SQL data source reads with, built from its configuration. Names (`table`,
 * `columns`, `cursor_column`) are read as PostgreSQL reads them, a plain name folded to lower case
 * or a "quoted" one kept as written, and are always sent quoted: nothing of them is interpolated
 * as SQL. `where`, `prefix` and `suffix` are SQL the operator wrote for their own database (read
 * in a read-only session): `where` goes in parentheses; `prefix` and `suffix` surround the
 * statement as in the SQL input of CIVITAS/CORE's stream processor (text before SELECT, such as a
 * WITH clause, and text after the WHERE, such as GROUP BY). That whole statement is then read as a
 * subquery, so that the paging on `cursor_column` applies to what the operator's statement selects.
 */

/** The alias the cursor value is selected under (and taken out of each record again). */
export const CURSOR_ALIAS = '__pipeline_cursor';

export interface SqlSource {
  /** The operator's statement, paged over as a subquery. */
  inner: string;
  hasCursor: boolean;
}

const PLAIN = /^[A-Za-z_][A-Za-z0-9_$]*$/;
const QUOTED = /^"((?:[^"]|"")+)"$/;

/** The quoted form of one identifier as written (`Sensors` → `"sensors"`, `"Sensors"` → `"Sensors"`), or null. */
export function quotedIdentifier(written: string): string | null {
  if (written.length > 130) return null;
  if (PLAIN.test(written)) return `"${written.toLowerCase()}"`;
  const quoted = QUOTED.exec(written);
  return quoted ? `"${quoted[1]}"` : null;
}

/** `table` or `schema.table` quoted, or null when it is anything else. */
export function quotedTableName(written: string): string | null {
  const parts = written.match(/^("(?:[^"]|"")+"|[^."]+)(?:\.("(?:[^"]|"")+"|[^."]+))?$/);
  if (!parts) return null;
  const quoted = [parts[1]!, parts[2]].filter((part): part is string => part !== undefined).map(quotedIdentifier);
  return quoted.every((part) => part !== null) ? quoted.join('.') : null;
}

/** The statement to page over, or why the configuration cannot make one (naming the member at fault). */
export function sqlSource(configuration: Record<string, unknown>): SqlSource | string {
  const { table, columns, where, prefix, suffix, cursor_column: cursorColumn } = configuration;
  if (typeof table !== 'string' || table === '') return 'configuration.table is missing';
  const from = quotedTableName(table);
  if (from === null) return `configuration.table ${JSON.stringify(table.slice(0, 80))} is not a table name or schema.table`;
  if (!Array.isArray(columns) || columns.length === 0) return 'configuration.columns must name at least one column';
  const selected: string[] = [];
  for (const column of columns) {
    const quoted = column === '*' ? '*' : typeof column === 'string' ? quotedIdentifier(column) : null;
    if (quoted === null) return `configuration.columns: ${JSON.stringify(String(column).slice(0, 80))} is not a column name (or *)`;
    selected.push(quoted);
  }
  let cursor: string | null = null;
  if (cursorColumn !== undefined && cursorColumn !== null) {
    cursor = typeof cursorColumn === 'string' ? quotedIdentifier(cursorColumn) : null;
    if (cursor === null) return `configuration.cursor_column ${JSON.stringify(String(cursorColumn).slice(0, 80))} is not a column name`;
    selected.push(`${cursor} AS "${CURSOR_ALIAS}"`);
  }
  for (const [name, value] of Object.entries({ where, prefix, suffix })) {
    if (value !== undefined && value !== null && typeof value !== 'string') return `configuration.${name} must be a string`;
  }
  const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);
  const inner = [
    text(prefix), `SELECT ${selected.join(', ')} FROM ${from}`, text(where) ? `WHERE (${text(where)})` : null, text(suffix),
  ].filter(Boolean).join(' ');
  return { inner, hasCursor: cursor !== null };
}

/** A page of rows after `$2` (or from the start without it), `$1` rows at most, in cursor order. */
export function pageStatement(source: SqlSource, afterPosition: boolean): string {
  const after = afterPosition ? ` AND "${CURSOR_ALIAS}" > $2` : '';
  return `SELECT * FROM (${source.inner}) AS source WHERE "${CURSOR_ALIAS}" IS NOT NULL${after} ORDER BY "${CURSOR_ALIAS}" LIMIT $1`;
}

/** Every row whose cursor value is `$1` (read through a server-side cursor, however many there are). */
export function sameValueStatement(source: SqlSource): string {
  return `SELECT * FROM (${source.inner}) AS source WHERE "${CURSOR_ALIAS}" = $1`;
}

/** Every row, without a cursor column (read through a server-side cursor). */
export function everyRowStatement(source: SqlSource): string {
  return `SELECT * FROM (${source.inner}) AS source`;
}
