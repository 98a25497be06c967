import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { QueryOptions } from './query/ast.js';
import { compileFilter, compileOrderBy } from './query/compile.js';
import type { EntityDef, PropertyDef } from './model.js';
import { createResolver } from './resolver.js';
import { column, tableOf, type SqlContext } from './sql-context.js';
import { selectList, type Row } from './serialize.js';

/** The store's SQL context plus the paging limits of this server. */
export interface ReadContext extends SqlContext {
  db: Database;
  pageSize: number;
  maxTop: number;
}

export interface Page {
  top: number;
  skip: number;
}

/** `$top` defaults to the page size; one above the cap is served as the cap (with a next link). */
export const pageOf = (ctx: ReadContext, options: QueryOptions): Page => ({
  top: Math.min(options.top ?? ctx.pageSize, ctx.maxTop),
  skip: options.skip ?? 0,
});

export const and = (conditions: RawBuilder<unknown>[]) =>
  conditions.length === 0 ? sql`true` : sql.join(conditions.map((c) => sql`(${c})`), sql` and `);

/** The conditions of `$filter` on top of the ones the path imposes. */
export function whereOf(ctx: ReadContext, entity: EntityDef, alias: string, scope: RawBuilder<unknown>[], options: QueryOptions) {
  const conditions = [...scope];
  if (options.filter) conditions.push(compileFilter(options.filter, createResolver(ctx, entity, alias, '$filter'), { postgis: ctx.postgis }));
  return and(conditions);
}

/**
 * `$orderby` then the id, so that pages never overlap or skip a row whose sort keys tie. The id
 * follows the last key's direction: `phenomenonTime desc, id desc` is the Observations index's
 * own order, so "the latest readings" is an index scan that stops at `$top`. Without `$orderby`,
 * `rank` (a ranked link's order, a MultiDatastream's ObservedProperties) comes first.
 */
export function orderOf(ctx: ReadContext, entity: EntityDef, alias: string, options: QueryOptions, rank?: RawBuilder<unknown>) {
  const items = options.orderBy?.length ? compileOrderBy(options.orderBy, createResolver(ctx, entity, alias, '$orderby'), { postgis: ctx.postgis }) : rank ? [rank] : [];
  const tieBreaker = options.orderBy?.at(-1)?.direction === 'desc' ? sql`desc` : sql`asc`;
  return sql.join([...items, sql`${column(alias, 'id')} ${tieBreaker}`]);
}

export interface CollectionResult {
  rows: Row[];
  count?: number;
  /** More rows exist after this page. */
  more: boolean;
  page: Page;
}

/** One page of an entity set (or of the part of it a path scopes), with its total count if asked. */
export async function readCollection(
  ctx: ReadContext, entity: EntityDef, alias: string, scope: RawBuilder<unknown>[],
  options: QueryOptions, properties: PropertyDef[], rank?: RawBuilder<unknown>,
): Promise<CollectionResult> {
  const page = pageOf(ctx, options);
  const from = sql`${tableOf(ctx, entity)} as ${sql.id(alias)}`;
  const where = whereOf(ctx, entity, alias, scope, options);
  // One row more than the page tells whether a next page exists without counting.
  const { rows } = await sql<Row>`select ${selectList(ctx, entity, alias, properties)} from ${from}
    where ${where} order by ${orderOf(ctx, entity, alias, options, rank)}
    limit ${page.top + 1} offset ${page.skip}`.execute(ctx.db);
  // `$top=0` asks for the count alone; a next link would point at the same empty page forever.
  const result: CollectionResult = { rows: rows.slice(0, page.top), more: page.top > 0 && rows.length > page.top, page };
  if (options.count) {
    const counted = await sql<{ n: number }>`select count(*) as n from ${from} where ${where}`.execute(ctx.db);
    result.count = Number(counted.rows[0]?.n ?? 0);
  }
  return result;
}

/** One entity by id, or undefined. */
export async function readEntity(ctx: ReadContext, entity: EntityDef, id: number, properties: PropertyDef[]): Promise<Row | undefined> {
  const alias = 'e';
  const { rows } = await sql<Row>`select ${selectList(ctx, entity, alias, properties)}
    from ${tableOf(ctx, entity)} as ${sql.id(alias)} where ${column(alias, 'id')} = ${id}`.execute(ctx.db);
  return rows[0];
}
