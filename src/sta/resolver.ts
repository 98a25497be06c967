import { sql, type RawBuilder } from 'kysely';
import type { PropertyResolver, ResolvedProperty } from './query/ast.js';
import { StaQueryError } from './query/errors.js';
import { storedStreamProperty } from './derived.js';
import { column, freshAlias, tableOf, type SqlContext } from './sql-context.js';
import { ENTITIES, navigationOf, propertyOf, type EntityDef, type NavigationDef, type PropertyDef } from './model.js';

/**
 * The SQL of one property of a row under `alias`. A (Multi)Datastream's times and area are read
 * from the columns the triggers of derived.ts keep.
 */
export function propertySql(ctx: SqlContext, entity: EntityDef, property: PropertyDef, alias: string): ResolvedProperty {
  if (property.derived) return storedStreamProperty(ctx, property.name, alias);
  const col = (suffix = '') => column(alias, property.column + suffix);
  switch (property.kind) {
    case 'string':
      return { type: 'string', sql: col() };
    case 'json':
    case 'object':
    case 'objectArray':
    case 'stringArray':
      return { type: 'json', sql: col() };
    case 'geometry':
      return { type: 'geometry', sql: col() };
    case 'datetime':
      return { type: 'datetime', sql: col() };
    case 'interval':
      return { type: 'interval', start: col('_start'), end: col('_end') };
  }
}

/** Wraps a property of the row a to-one foreign key points at into a scalar subquery. */
function throughToOne(inner: ResolvedProperty, from: RawBuilder<unknown>): ResolvedProperty {
  const wrap = (expr: RawBuilder<unknown>) => sql`(select ${expr} from ${from})`;
  if (inner.type === 'interval') return { type: 'interval', start: wrap(inner.start), end: wrap(inner.end) };
  return { ...inner, sql: wrap(inner.sql) };
}

/**
 * The resolver the query compiler uses for `$filter` and `$orderby` on one entity type:
 * plain properties, json paths below `properties/`, `parameters/`, `result` and the other json
 * properties (the GeoJSON of `location` and `feature` too: `location/type`,
 * `location/geometry/type`), `id`, paths through to-one navigations (`Datastream/Thing/name`),
 * and through to-many navigations in conditions (`exists`).
 */
export function createResolver(ctx: SqlContext, entity: EntityDef, alias: string, where = '$filter'): Required<PropertyResolver> {
  const resolver: Required<PropertyResolver> = {
    property(path: string[], pos: number): ResolvedProperty {
      const [head, ...rest] = path;
      if (head === undefined) throw new StaQueryError(where, pos, '', 'empty property path');
      if ((head === 'id' || head === '@iot.id') && rest.length === 0) return { type: 'id', sql: column(alias, 'id') };
      const property = propertyOf(entity, head);
      if (property) {
        const resolved = propertySql(ctx, entity, property, alias);
        if (rest.length === 0) return resolved;
        // A GeoJSON value is JSON like any other below its top: `location/geometry/type`.
        if (resolved.type !== 'json' && resolved.type !== 'geometry') {
          throw new StaQueryError(where, pos, path.join('/'), `${head} has no member ${rest.join('/')}`);
        }
        // Each member name is a bound parameter; `#>` walks the jsonb by that text array.
        const members = sql.join(rest.map((member) => sql`${member}`));
        return { type: 'json', sql: sql`(${resolved.sql} #> array[${members}]::text[])` };
      }
      const nav = navigationOf(entity, head);
      if (nav && !nav.toMany && nav.join.kind === 'fkHere' && rest.length > 0) {
        // `Datastream/id` is the foreign key itself: no subquery, and its index applies.
        if (rest.length === 1 && (rest[0] === 'id' || rest[0] === '@iot.id')) return { type: 'id', sql: column(alias, nav.join.column) };
        const target = ENTITIES[nav.target];
        const inner = freshAlias(ctx);
        const from = sql`${tableOf(ctx, target)} as ${sql.id(inner)} where ${column(inner, 'id')} = ${column(alias, nav.join.column)}`;
        return throughToOne(createResolver(ctx, target, inner, where).property(rest, pos), from);
      }
      if (nav?.toMany && rest.length > 0) {
        throw new StaQueryError(where, pos, path.join('/'), `${head} is a to-many navigation: a path through it can only be used in a $filter condition (true when it holds for any related entity)`);
      }
      throw new StaQueryError(where, pos, path.join('/'), `${entity.singular} has no property ${path.join('/')}`);
    },

    relatedPrefix(path) {
      const [head, ...rest] = path;
      const nav = head === undefined || rest.length === 0 ? undefined : navigationOf(entity, head);
      if (!nav) return 0;
      if (nav.toMany) return 1;
      if (nav.join.kind !== 'fkHere') return 0;
      const below = createResolver(ctx, ENTITIES[nav.target], alias, where).relatedPrefix(rest);
      return below === 0 ? 0 : below + 1;
    },

    exists(path, pos, predicate) {
      const [head, ...rest] = path;
      const nav = head === undefined || rest.length === 0 ? undefined : navigationOf(entity, head);
      if (!nav) return undefined;
      const target = ENTITIES[nav.target];
      const inner = freshAlias(ctx);
      const related = (targetResolver: PropertyResolver) => predicate(scoped(resolver, [head!], targetResolver));
      if (!nav.toMany) {
        if (nav.join.kind !== 'fkHere') return undefined;
        // A to-one step on the way to a to-many one (`Datastream/Thing/Locations/location`).
        const condition = createResolver(ctx, target, inner, where).exists(rest, pos, related);
        if (!condition) return undefined;
        return sql`exists (select 1 from ${tableOf(ctx, target)} as ${sql.id(inner)}
          where ${column(inner, 'id')} = ${column(alias, nav.join.column)} and ${condition})`;
      }
      const { from, parentKey } = relatedRows(ctx, nav, inner);
      return sql`exists (select 1 from ${from} where ${parentKey} = ${column(alias, 'id')}
        and ${related(createResolver(ctx, target, inner, where))})`;
    },
  };
  return resolver;
}

/**
 * A resolver inside the `exists` of the navigation `prefix`: paths that start with it resolve on
 * the related row (`inner`), every other path as `outer` resolves it.
 */
function scoped(outer: PropertyResolver, prefix: string[], inner: PropertyResolver): PropertyResolver {
  const below = (path: string[]) =>
    path.length > prefix.length && prefix.every((segment, i) => path[i] === segment) ? path.slice(prefix.length) : undefined;
  return {
    property(path, pos) {
      const rest = below(path);
      return rest ? inner.property(rest, pos) : outer.property(path, pos);
    },
    exists(path, pos, predicate) {
      const rest = below(path);
      if (rest) return inner.exists?.(rest, pos, (deeper) => predicate(scoped(outer, prefix, deeper)));
      return outer.exists?.(path, pos, (other) => predicate(scoped(other, prefix, inner)));
    },
    relatedPrefix(path) {
      const rest = below(path);
      if (!rest) return outer.relatedPrefix?.(path) ?? 0;
      const n = inner.relatedPrefix?.(rest) ?? 0;
      return n === 0 ? 0 : prefix.length + n;
    },
  };
}

/** The rows of a to-many navigation's target (joined to the link table if any) and the expression naming each one's parent. */
export function relatedRows(ctx: SqlContext, nav: NavigationDef, alias: string): { from: RawBuilder<unknown>; parentKey: RawBuilder<unknown> } {
  const target = ENTITIES[nav.target];
  const table = sql`${tableOf(ctx, target)} as ${sql.id(alias)}`;
  if (nav.join.kind === 'link') {
    const link = `${alias}_link`;
    return {
      from: sql`${table} join ${sql.id(ctx.schema, nav.join.table)} as ${sql.id(link)} on ${column(link, nav.join.there)} = ${column(alias, 'id')}`,
      parentKey: column(link, nav.join.here),
    };
  }
  if (nav.join.kind === 'fkThere') return { from: table, parentKey: column(alias, nav.join.column) };
  throw new Error(`${nav.name} is not a to-many navigation`);
}
