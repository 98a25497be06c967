import { sql } from 'kysely';
import type { ExpandItem, QueryOptions } from './query/ast.js';
import { StaQueryError } from './query/errors.js';
import { ENTITIES, navigationOf, type EntityDef, type NavigationDef } from './model.js';
import { relatedRows } from './resolver.js';
import { column, freshAlias, tableOf } from './sql-context.js';
import { orderOf, pageOf, whereOf, type ReadContext } from './read.js';
import { rowForeignKey, rowId, selectionOf, selectList, type Row } from './serialize.js';
import { entityWriter, shapedOf, type Shaped } from './shaped.js';
import { navigationLink } from './links.js';
import { optionsQuery } from './unparse.js';

/**
 * `$expand`, one level at a time: every expanded navigation costs one query for all the parent
 * rows of its level together, never one per parent. A to-many expansion pages each parent's
 * children on its own, in one lateral subquery per parent row of that single query.
 */

/** `Datastreams/Observations` is `Datastreams($expand=Observations)`: one entry per first navigation. */
function groupByNavigation(entity: EntityDef, items: ExpandItem[]): Map<NavigationDef, QueryOptions> {
  const groups = new Map<NavigationDef, QueryOptions>();
  for (const item of items) {
    const [head, ...rest] = item.path;
    const nav = head === undefined ? undefined : navigationOf(entity, head);
    if (!nav) throw new StaQueryError('$expand', item.pos, head ?? '', `${entity.singular} has no navigation ${head ?? ''}`);
    const options = groups.get(nav) ?? {};
    if (rest.length === 0) {
      groups.set(nav, { ...item.options, expand: [...(options.expand ?? []), ...(item.options.expand ?? [])] });
    } else {
      groups.set(nav, { ...options, expand: [...(options.expand ?? []), { path: rest, options: item.options, pos: item.pos }] });
    }
  }
  return groups;
}

export async function expandAll(ctx: ReadContext, baseUrl: string, entity: EntityDef, parents: Shaped[], items: ExpandItem[] | undefined) {
  if (!items?.length || parents.length === 0) return;
  for (const [nav, options] of groupByNavigation(entity, items)) {
    if (nav.toMany) await expandToMany(ctx, baseUrl, entity, nav, options, parents);
    else await expandToOne(ctx, baseUrl, nav, options, parents);
  }
}

function shape(baseUrl: string, target: EntityDef, options: QueryOptions, rows: Row[]): Shaped[] {
  const own = entityWriter(baseUrl, target, selectionOf(target, options.select));
  return rows.map((row) => shapedOf(row, own));
}

async function expandToOne(ctx: ReadContext, baseUrl: string, nav: NavigationDef, options: QueryOptions, parents: Shaped[]) {
  if (nav.join.kind !== 'fkHere') return;
  const fk = nav.join.column;
  const target = ENTITIES[nav.target];
  const ids = [...new Set(parents.map((p) => rowForeignKey(p.row, fk)).filter((id): id is number => id !== null))];
  const alias = freshAlias(ctx);
  const scope = [sql`${column(alias, 'id')} = any(${ids}::bigint[])`];
  const { rows } = ids.length === 0 ? { rows: [] as Row[] } : await sql<Row>`select ${selectList(ctx, target, alias, selectionOf(target, options.select).properties)}
    from ${tableOf(ctx, target)} as ${sql.id(alias)} where ${whereOf(ctx, target, alias, scope, options)}`.execute(ctx.db);
  const children = shape(baseUrl, target, options, rows);
  const byId = new Map(children.map((c) => [rowId(c.row), c]));
  for (const parent of parents) {
    const id = rowForeignKey(parent.row, fk);
    parent.expanded.push([nav.name, id === null ? null : (byId.get(id) ?? null)]);
  }
  await expandAll(ctx, baseUrl, target, children, options.expand);
}

async function expandToMany(ctx: ReadContext, baseUrl: string, entity: EntityDef, nav: NavigationDef, options: QueryOptions, parents: Shaped[]) {
  const target = ENTITIES[nav.target];
  const alias = freshAlias(ctx);
  const { from, parentKey } = relatedRows(ctx, nav, alias);
  const ids = parents.map((p) => rowId(p.row));
  const page = pageOf(ctx, options);
  const properties = selectionOf(target, options.select).properties;
  const where = whereOf(ctx, target, alias, [sql`${parentKey} = "__p"."id"`], options);
  const rank = nav.join.kind === 'link' && nav.join.rank ? column(`${alias}_link`, nav.join.rank) : undefined;
  const order = orderOf(ctx, target, alias, options, rank);
  // The window count sees every child the filter keeps, before the page is cut; it makes the
  // database read each parent's whole set, so it is computed only when `$count` asks.
  const counted = options.count ? sql`count(*) over ()` : sql`null::bigint`;
  // One lateral page per parent: with an index on (parent, order) each page reads only its own
  // rows (the latest 3 of a million Observations are 3 index entries), not the parent's whole set.
  const { rows } = await sql<Row>`select "__page".*, "__p"."id" as "__parent"
    from unnest(${ids}::bigint[]) with ordinality as "__p"(id, ord)
    cross join lateral (
      select ${selectList(ctx, target, alias, properties)}, row_number() over (order by ${order}) as "__rn", ${counted} as "__count"
        from ${from} where ${where}
       order by ${order}
       limit ${page.top + 1} offset ${page.skip}) as "__page"
    order by "__p".ord, "__page"."__rn"`.execute(ctx.db);

  const byParent = new Map<number, Row[]>();
  for (const row of rows) {
    const parent = Number(row['__parent']);
    const mine = byParent.get(parent);
    if (mine) mine.push(row);
    else byParent.set(parent, [row]);
  }
  const emptyPages = await countChildren(ctx, nav, ids.filter((id) => !byParent.has(id)), options);
  // Every parent's next page starts at the same place: its query is written once.
  const nextPage = page.top > 0 ? optionsQuery({ ...options, top: page.top, skip: page.skip + page.top }) : '';
  const allChildren: Shaped[] = [];
  for (const parent of parents) {
    const id = rowId(parent.row);
    const mine = byParent.get(id) ?? [];
    const children = shape(baseUrl, target, options, mine.slice(0, page.top));
    allChildren.push(...children);
    if (options.count) parent.expanded.push([`${nav.name}@iot.count`, mine[0] ? Number(mine[0]['__count']) : (emptyPages.get(id) ?? 0)]);
    parent.expanded.push([nav.name, children]);
    if (page.top > 0 && mine.length > page.top) parent.expanded.push([`${nav.name}@iot.nextLink`, `${navigationLink(baseUrl, entity, id, nav.name)}?${nextPage}`]);
  }
  await expandAll(ctx, baseUrl, target, allChildren, options.expand);
}

/** Counts for the parents whose page came back empty (a `$skip` past their last child), in one query. */
async function countChildren(ctx: ReadContext, nav: NavigationDef, parentIds: number[], options: QueryOptions): Promise<Map<number, number>> {
  if (!options.count || parentIds.length === 0) return new Map();
  const target = ENTITIES[nav.target];
  const alias = freshAlias(ctx);
  const { from, parentKey } = relatedRows(ctx, nav, alias);
  const where = whereOf(ctx, target, alias, [sql`${parentKey} = any(${parentIds}::bigint[])`], options);
  const { rows } = await sql<{ parent: number; n: number }>`select ${parentKey} as parent, count(*) as n from ${from} where ${where} group by 1`.execute(ctx.db);
  return new Map(rows.map((r) => [Number(r.parent), Number(r.n)]));
}
