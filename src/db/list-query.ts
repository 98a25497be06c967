import { sql, type Expression, type SelectQueryBuilder, type SqlBool } from 'kysely';

/**
 * The SQL side of the shared list rules: paging, sorting and the shared filters, given as plain
 * values. The HTTP side (http/page.ts) declares the query parameters and builds these values from
 * them; restricting a list to what the caller may read is access/readable-scope.ts.
 */

export interface SortSpec { property: string; direction: 'asc' | 'desc' }

/** One page of a list: its zero-based index, its size and the order, before the tie-breaker on id. */
export interface ListRequest { page: number; size: number; sort: SortSpec[] }

/** The shared filters as the SQL reads them (ids as the query string gives them, comma-separated). */
export interface SharedFilterValues {
  id?: readonly string[] | undefined;
  createdAtFrom?: string | undefined;
  createdAtTo?: string | undefined;
  modifiedAtFrom?: string | undefined;
  modifiedAtTo?: string | undefined;
}

/** Splits the (possibly repeated) comma-separated id parameter into ids. */
export const splitIds = (values: readonly string[] | undefined): string[] | undefined =>
  values?.flatMap((value) => value.split(',')).map((id) => id.toLowerCase());

/** `%value%` for ILIKE with the caller's `%`, `_` and `\` taken literally. */
export const containsPattern = (value: string) => `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Case-insensitive substring match of any of the columns. */
export const containsAny = (columns: string[], value: string): Expression<SqlBool> => {
  const pattern = containsPattern(value);
  return sql<SqlBool>`(${sql.join(columns.map((c) => sql`${sql.ref(c)} ilike ${pattern}`), sql` or `)})`;
};

/** Applies the shared filters (ids, created/modified ranges) to a list query on `alias`. */
export function withSharedFilters<QB extends SelectQueryBuilder<any, any, any>>(qb: QB, alias: string, query: SharedFilterValues): QB {
  let out = qb as SelectQueryBuilder<any, any, any>;
  const ids = splitIds(query.id);
  if (ids) out = out.where(sql.ref(`${alias}.id`), 'in', ids);
  if (query.createdAtFrom) out = out.where(sql.ref(`${alias}.created_at`), '>=', query.createdAtFrom);
  // Responses show milliseconds while PostgreSQL keeps microseconds: an upper bound covers its whole millisecond.
  if (query.createdAtTo) out = out.where(sql.ref(`${alias}.created_at`), '<', sql`${query.createdAtTo}::timestamptz + interval '1 millisecond'`);
  if (query.modifiedAtFrom) out = out.where(sql.ref(`${alias}.modified_at`), '>=', query.modifiedAtFrom);
  if (query.modifiedAtTo) out = out.where(sql.ref(`${alias}.modified_at`), '<', sql`${query.modifiedAtTo}::timestamptz + interval '1 millisecond'`);
  return out as QB;
}

/**
 * Runs one page of a filtered list: the ids in order plus the total. The page query orders by the
 * requested columns and then by id (pages never repeat or skip) and stops after `size` rows, so
 * an index on the sort column serves it without reading every match; the total comes from a
 * separate count, and only when the page cannot tell it (a short page is the last one). A single
 * query with `count(*) over ()` would have to read and sort every match before the first row.
 * The caller loads the representations of the returned ids with its own loader.
 */
export async function fetchPageIds(
  qb: SelectQueryBuilder<any, any, any>,
  alias: string,
  request: ListRequest,
  sortColumns: Record<string, string>,
): Promise<{ ids: string[]; total: number }> {
  let query = qb.select(sql.ref<string>(`${alias}.id`).as('id'));
  for (const { property, direction } of request.sort) query = query.orderBy(sql.ref(sortColumns[property]!), direction);
  const offset = request.page * request.size;
  query = query.orderBy(sql.ref(`${alias}.id`), 'asc').limit(request.size).offset(offset);
  const ids = ((await query.execute()) as { id: string }[]).map((row) => row.id);
  if (ids.length > 0 && ids.length < request.size) return { ids, total: offset + ids.length };
  if (ids.length === 0 && request.page === 0) return { ids, total: 0 };
  const counted = (await qb.select(sql<number>`count(*)`.as('total')).executeTakeFirst()) as { total: number } | undefined;
  return { ids, total: Number(counted?.total ?? 0) };
}

/** Puts loaded representations back into the order of the page's ids. */
export function inIdOrder<T extends { id: string }>(ids: readonly string[], items: readonly T[]): T[] {
  const byId = new Map(items.map((item) => [item.id, item]));
  return ids.map((id) => byId.get(id)).filter((item): item is T => item !== undefined);
}

/**
 * The text filters of every named resource: `name` and `description` (partial match each) and
 * `q` (partial match in either), on the columns `${alias}.name` and `${alias}.description`.
 */
export function withNameDescriptionFilters<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB, alias: string, query: { name?: string; description?: string; q?: string },
): QB {
  let out = qb as SelectQueryBuilder<any, any, any>;
  if (query.name) out = out.where(containsAny([`${alias}.name`], query.name));
  if (query.description) out = out.where(containsAny([`${alias}.description`], query.description));
  if (query.q) out = out.where(containsAny([`${alias}.name`, `${alias}.description`], query.q));
  return out as QB;
}
