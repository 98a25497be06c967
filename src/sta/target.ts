import { sql, type RawBuilder } from 'kysely';
import { AppError } from '../errors.js';
import type { ResourcePath } from './query/ast.js';
import { StaQueryError } from './query/errors.js';
import { entityBySet, ENTITIES, navigationOf, propertyOf, type EntityDef, type NavigationDef, type PropertyDef } from './model.js';
import { column, tableOf, type SqlContext } from './sql-context.js';
import type { Database } from '../db/client.js';

/**
 * What a resource path addresses, once every entity on the way has been found: a collection
 * (maybe scoped to one parent's navigation), one entity, or one property of an entity; with `$ref`
 * or `$value` at the end. An entity on the way that does not exist answers 404.
 */
export type Target =
  | { kind: 'collection'; entity: EntityDef; parent?: { entity: EntityDef; id: number; nav: NavigationDef; unchecked?: boolean }; ref: boolean }
  | { kind: 'entity'; entity: EntityDef; id: number; ref: boolean; via?: Via }
  | { kind: 'property'; entity: EntityDef; id: number; property: PropertyDef | 'id'; value: boolean };

/** The entity and navigation an entity was reached through (`Things(1)/Locations(5)`: Thing 1's Locations). */
export interface Via {
  entity: EntityDef;
  id: number;
  nav: NavigationDef;
}

const notFound = (what: string) => new AppError('NOT_FOUND', `${what} does not exist`);

/** The rows of a to-many navigation from one parent, as a condition on the child alias. */
export function scopeOf(ctx: SqlContext, nav: NavigationDef, parentId: number, alias: string): RawBuilder<unknown> {
  if (nav.join.kind === 'fkThere') return sql`${column(alias, nav.join.column)} = ${parentId}`;
  if (nav.join.kind === 'link') {
    return sql`exists (select 1 from ${sql.id(ctx.schema, nav.join.table)} as l
      where l.${sql.id(nav.join.there)} = ${column(alias, 'id')} and l.${sql.id(nav.join.here)} = ${parentId})`;
  }
  throw new Error(`${nav.name} is not a to-many navigation`);
}

/** The rank of each row in a ranked link navigation from one parent (see `NavJoin`), else undefined. */
export function rankOf(ctx: SqlContext, nav: NavigationDef, parentId: number, alias: string): RawBuilder<unknown> | undefined {
  if (nav.join.kind !== 'link' || !nav.join.rank) return undefined;
  return sql`(select l.${sql.id(nav.join.rank)} from ${sql.id(ctx.schema, nav.join.table)} as l
    where l.${sql.id(nav.join.there)} = ${column(alias, 'id')} and l.${sql.id(nav.join.here)} = ${parentId})`;
}

export async function exists(db: Database, ctx: SqlContext, entity: EntityDef, id: number, scope?: (alias: string) => RawBuilder<unknown>) {
  const { rows } = await sql`select 1 from ${tableOf(ctx, entity)} as x
    where x.id = ${id} and ${scope ? scope('x') : sql`true`}`.execute(db);
  return rows.length > 0;
}

async function followToOne(db: Database, ctx: SqlContext, entity: EntityDef, id: number, nav: NavigationDef): Promise<number | null> {
  if (nav.join.kind !== 'fkHere') return null;
  const { rows } = await sql<{ fk: number | null }>`select ${sql.id(nav.join.column)} as fk
    from ${tableOf(ctx, entity)} where id = ${id}`.execute(db);
  return rows[0]?.fk == null ? null : Number(rows[0].fk);
}

/**
 * A read of one entity's navigation collection (`Datastreams(1)/Observations`, the hottest path of
 * all) leaves the parent unchecked: the reader checks it only when the page comes back empty
 * (`parentMissing`), which saves a query on every page that has rows.
 */
function uncheckedNavigationRead(path: ResourcePath): Target | null {
  const [first, second, ...more] = path;
  if (more.length > 0 || first?.kind !== 'entitySet' || first.id === undefined || second?.kind !== 'navigation' || second.id !== undefined) return null;
  const entity = entityBySet(first.name);
  const nav = entity ? navigationOf(entity, second.name) : undefined;
  if (!entity || !nav?.toMany) return null;
  return { kind: 'collection', entity: ENTITIES[nav.target], parent: { entity, id: first.id, nav, unchecked: true }, ref: false };
}

/** Whether an unchecked parent (see `uncheckedNavigationRead`) turns out not to exist: then the read is a 404. */
export async function parentMissing(db: Database, ctx: SqlContext, target: Target): Promise<AppError | null> {
  if (target.kind !== 'collection' || !target.parent?.unchecked) return null;
  const { entity, id } = target.parent;
  return (await exists(db, ctx, entity, id)) ? null : notFound(`${entity.singular} ${id}`);
}

export async function resolveTarget(db: Database, ctx: SqlContext, path: ResourcePath, forRead = false): Promise<Target> {
  const unchecked = forRead ? uncheckedNavigationRead(path) : null;
  if (unchecked) return unchecked;
  const [first, ...rest] = path;
  if (!first || first.kind !== 'entitySet') throw new AppError('NOT_FOUND', 'No such resource');
  const rootEntity = entityBySet(first.name);
  if (!rootEntity) throw notFound(`The entity set ${first.name}`);
  let target: Target = first.id === undefined
    ? { kind: 'collection', entity: rootEntity, ref: false }
    : { kind: 'entity', entity: rootEntity, id: first.id, ref: false };
  if (target.kind === 'entity' && !(await exists(db, ctx, rootEntity, target.id))) throw notFound(`${rootEntity.singular} ${target.id}`);

  for (const segment of rest) {
    if (segment.kind === 'ref' && (target.kind === 'collection' || target.kind === 'entity') && !target.ref) {
      target.ref = true;
      continue;
    }
    if (segment.kind === 'value' && target.kind === 'property' && !target.value) {
      target.value = true;
      continue;
    }
    if (target.kind !== 'entity' || target.ref) {
      throw new StaQueryError('path', segment.pos, 'name' in segment ? segment.name : segment.kind, 'this segment cannot follow a collection, a property or $ref');
    }
    if (segment.kind === 'property' || segment.kind === 'navigation') {
      const name = segment.name;
      const nav = navigationOf(target.entity, name);
      if (!nav) {
        const property: PropertyDef | 'id' | undefined = name === 'id' ? 'id' : propertyOf(target.entity, name);
        if (!property || segment.kind === 'navigation' && segment.id !== undefined) throw notFound(`${target.entity.singular} has no property ${name}, which`);
        target = { kind: 'property', entity: target.entity, id: target.id, property, value: false };
        continue;
      }
      const next = ENTITIES[nav.target];
      const navId = segment.kind === 'navigation' ? segment.id : undefined;
      if (!nav.toMany) {
        if (navId !== undefined) throw new StaQueryError('path', segment.pos, name, `${name} is a single entity and takes no id`);
        const id = await followToOne(db, ctx, target.entity, target.id, nav);
        if (id === null) throw notFound(`The ${name} of ${target.entity.singular} ${target.id}`);
        target = { kind: 'entity', entity: next, id, ref: false, via: { entity: target.entity, id: target.id, nav } };
      } else if (navId !== undefined) {
        const parentId: number = target.id;
        if (!(await exists(db, ctx, next, navId, (alias) => scopeOf(ctx, nav, parentId, alias)))) {
          throw notFound(`${next.singular} ${navId} of ${target.entity.singular} ${parentId}`);
        }
        target = { kind: 'entity', entity: next, id: navId, ref: false, via: { entity: target.entity, id: parentId, nav } };
      } else {
        target = { kind: 'collection', entity: next, parent: { entity: target.entity, id: target.id, nav }, ref: false };
      }
      continue;
    }
    throw new StaQueryError('path', segment.pos, segment.kind, 'unexpected segment');
  }
  return target;
}
