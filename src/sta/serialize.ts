import { sql, type RawBuilder } from 'kysely';
import { StaQueryError } from './query/errors.js';
import { foreignKeys, navigationOf, propertyOf, type EntityDef, type PropertyDef } from './model.js';
import { propertySql } from './resolver.js';
import { column, type SqlContext } from './sql-context.js';
import { navigationLink, selfLink } from './links.js';

/**
 * The select list of an entity and the shaping of its rows into the JSON the standard shows.
 * Times are formatted by the database (ISO 8601, UTC, milliseconds) so that PGlite and
 * PostgreSQL answer the same text whatever their drivers make of timestamptz.
 */

export type Row = Record<string, unknown>;

/** Which properties and navigation links an answer shows, from `$select`. */
export interface Selection {
  id: boolean;
  properties: PropertyDef[];
  navigations: Set<string>;
}

export function selectionOf(entity: EntityDef, select: string[] | undefined): Selection {
  if (!select) return { id: true, properties: entity.properties, navigations: new Set(entity.navigations.map((n) => n.name)) };
  const selection: Selection = { id: false, properties: [], navigations: new Set() };
  select.forEach((name, index) => {
    if (name === 'id' || name === '@iot.id') selection.id = true;
    else if (propertyOf(entity, name)) selection.properties.push(propertyOf(entity, name)!);
    else if (navigationOf(entity, name)) selection.navigations.add(name);
    else throw new StaQueryError('$select', index, name, `${entity.singular} has no property ${name}`);
  });
  // In the model's order whatever the order asked for, so that answers read the same.
  selection.properties.sort((a, b) => entity.properties.indexOf(a) - entity.properties.indexOf(b));
  return selection;
}

const isoText = (expr: RawBuilder<unknown>) => sql`to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The columns to select: the id and to-one keys always (links and expansions need them), then the chosen properties. */
export function selectList(ctx: SqlContext, entity: EntityDef, alias: string, properties: PropertyDef[]): RawBuilder<unknown> {
  const items: RawBuilder<unknown>[] = [sql`${column(alias, 'id')} as "__id"`];
  for (const { column: fk } of foreignKeys(entity)) items.push(sql`${column(alias, fk)} as ${sql.id(`__fk_${fk}`)}`);
  for (const property of properties) {
    const resolved = propertySql(ctx, entity, property, alias);
    if (resolved.type === 'interval') {
      items.push(sql`${isoText(resolved.start)} as ${sql.id(`${property.name}__start`)}`);
      items.push(sql`${isoText(resolved.end)} as ${sql.id(`${property.name}__end`)}`);
    } else if (resolved.type === 'datetime') {
      items.push(sql`${isoText(resolved.sql)} as ${sql.id(property.name)}`);
    } else {
      items.push(sql`${resolved.sql} as ${sql.id(property.name)}`);
    }
  }
  return sql.join(items);
}

export const rowId = (row: Row) => Number(row['__id']);
export const rowForeignKey = (row: Row, fkColumn: string) => (row[`__fk_${fkColumn}`] == null ? null : Number(row[`__fk_${fkColumn}`]));

/** An interval as the standard writes it: one instant when start = end, else `start/end`. */
export function intervalText(start: unknown, end: unknown): string | null {
  if (start == null) return null;
  return start === end || end == null ? String(start) : `${String(start)}/${String(end)}`;
}

export function propertyValue(row: Row, property: PropertyDef): unknown {
  return valueReaderOf(property)(row);
}

// Property definitions are the schema's own, made once: each gets its reader once.
const valueReaders = new WeakMap<PropertyDef, (row: Row) => unknown>();

/** `propertyValue` for one property, its row keys made once: for writers of many rows. */
function valueReaderOf(property: PropertyDef): (row: Row) => unknown {
  let reader = valueReaders.get(property);
  if (!reader) valueReaders.set(property, reader = newValueReader(property));
  return reader;
}

function newValueReader(property: PropertyDef): (row: Row) => unknown {
  if (property.kind === 'interval') {
    const [start, end] = [`${property.name}__start`, `${property.name}__end`];
    return (row) => intervalText(row[start], row[end]);
  }
  const name = property.name;
  return (row) => row[name] ?? null;
}

/** One entity as JSON: `@iot.id`, `@iot.selfLink`, the chosen properties, then the navigation links. */
export function serializeEntity(baseUrl: string, entity: EntityDef, row: Row, selection: Selection): Record<string, unknown> {
  const id = rowId(row);
  const out: Record<string, unknown> = {};
  if (selection.id) {
    out['@iot.id'] = id;
    out['@iot.selfLink'] = selfLink(baseUrl, entity, id);
  }
  for (const property of selection.properties) out[property.name] = propertyValue(row, property);
  for (const nav of entity.navigations) {
    if (selection.navigations.has(nav.name)) out[`${nav.name}@iot.navigationLink`] = navigationLink(baseUrl, entity, id, nav.name);
  }
  return out;
}

/**
 * The members of `serializeEntity`'s object as JSON text, without its braces (empty when the
 * selection shows none), written straight from the row: the gateway sends pages on as text, and
 * building a hundred objects only for `JSON.stringify` to walk them again was a fifth of the
 * process's work on SensorThings' most common read. The same members in the same order; every
 * value as `JSON.stringify` writes it, so the text is byte for byte the same. Without braces so
 * that a writer can add members after them (expansions): cutting the brace off a written entity
 * would copy it. Pieces are appended with `+=` (V8 keeps them as a rope, copied once when the
 * answer is encoded): joining arrays of pieces per row, then the rows, copied every byte twice
 * more (measured with the encode: 280 µs a page of 100 Observations with their links, 181 µs so,
 * with each property's row keys made once per page).
 */
export function entityMembersWriter(baseUrl: string, entity: EntityDef, selection: Selection): (row: Row) => string {
  // Links differ only by the id: their text around it is escaped once.
  const linkAround = (after: string) => {
    const text = JSON.stringify(`${baseUrl}/${entity.set}(\u0000)${after}`);
    const at = text.indexOf('\\u0000');
    return [text.slice(0, at), text.slice(at + '\\u0000'.length)] as const;
  };
  const self = linkAround('');
  const first = selection.id ? [`"@iot.id":`, `,"@iot.selfLink":${self[0]}`, self[1]] as const : null;
  // Each member after the first starts with its comma.
  const properties = selection.properties.map((property, i) => ({
    key: `${i === 0 && !first ? '' : ','}${JSON.stringify(property.name)}:`,
    value: valueReaderOf(property),
  }));
  const navigations = entity.navigations.filter((nav) => selection.navigations.has(nav.name))
    .map((nav, i) => ({ key: `${i === 0 && !first && properties.length === 0 ? '' : ','}${JSON.stringify(`${nav.name}@iot.navigationLink`)}:`, link: linkAround(`/${nav.name}`) }));
  return (row) => {
    const id = rowId(row);
    let text = '';
    if (first) text += first[0] + id + first[1] + id + first[2];
    for (const { key, value } of properties) text += key + jsonText(value(row));
    for (const { key, link } of navigations) text += key + link[0] + id + link[1];
    return text;
  };
}

/** `JSON.stringify` of a value, with its commonest cases (null, a finite number) written without the call. */
function jsonText(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return JSON.stringify(value);
}
