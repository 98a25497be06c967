import type { EntityDef } from './model.js';
import { entityMembersWriter, serializeEntity, type Row, type Selection } from './serialize.js';

/**
 * The answer of a read as a tree of entities: each with its row, how its own members are written,
 * and what its expansions (expand.ts) add. Written once the whole tree is read, as objects or as
 * JSON text with the same bytes.
 */

/** What an expansion adds to an entity: its children, its one child (or null), a count or a next link. */
type Expanded = Shaped[] | Shaped | null | number | string;

/**
 * An entity on its way out: its row (for ids and keys), how its own members are written, and the
 * members its expansions add, in the order they are added. The answer is written from it once the
 * whole tree is read: as an object, or (for a caller that sends it on as it is) as JSON text.
 */
export interface Shaped {
  row: Row;
  own: EntityWriter;
  expanded: Array<[name: string, value: Expanded]>;
}

/** An entity's own members (`@iot.id`, its self link, its properties, its navigation links). */
export interface EntityWriter {
  object(row: Row): Record<string, unknown>;
  /** The same as JSON text without its braces: byte for byte the members `JSON.stringify` writes of `object(row)`. */
  members(row: Row): string;
}

/** One writer per entity set and selection, for all the rows of a page or an expansion. */
export function entityWriter(baseUrl: string, entity: EntityDef, selection: Selection): EntityWriter {
  let members: ((row: Row) => string) | undefined;
  return {
    object: (row) => serializeEntity(baseUrl, entity, row, selection),
    members: (row) => (members ??= entityMembersWriter(baseUrl, entity, selection))(row),
  };
}

export const shapedOf = (row: Row, own: EntityWriter): Shaped => ({ row, own, expanded: [] });

/** The entity as an object: its own members, then its expansions' (a child shared by several parents is written under each). */
export function shapedJson(shaped: Shaped): Record<string, unknown> {
  const out = shaped.own.object(shaped.row);
  for (const [name, value] of shaped.expanded) out[name] = Array.isArray(value) ? value.map(shapedJson) : isShaped(value) ? shapedJson(value) : value;
  return out;
}

/**
 * `shapedJson` as JSON text, written without the objects (the gateway sends it on as it is). An
 * `$expand` of 100 Datastreams with their latest Observation is 214 KB; written so, it costs the
 * gateway 5% less CPU than its objects and their `JSON.stringify` (5.46 against 5.79 ms a request).
 */
export function shapedText(shaped: Shaped): string {
  // Its own members, then each expansion's.
  let text = `{${shaped.own.members(shaped.row)}`;
  let comma = text.length > 1;
  for (const [name, value] of shaped.expanded) {
    text += `${comma ? ',' : ''}${JSON.stringify(name)}:${expandedText(value)}`;
    comma = true;
  }
  return `${text}}`;
}

function expandedText(value: Expanded): string {
  if (Array.isArray(value)) {
    let text = '[';
    value.forEach((child, i) => { text += (i === 0 ? '' : ',') + shapedText(child); });
    return `${text}]`;
  }
  return isShaped(value) ? shapedText(value) : JSON.stringify(value);
}

const isShaped = (value: Expanded): value is Shaped => value !== null && typeof value === 'object';
