import { sql, type RawBuilder } from 'kysely';
import { validationFailed } from '../errors.js';
import { ENTITIES, type EntityDef, type NavigationDef } from './model.js';
import { tableOf } from './sql-context.js';
import type { EntityInput, ParsedEntity } from './validate.js';
import { checkLinked, columnValues, insertRow, recordChange, type WriteContext } from './write-sql.js';
import { moveThingToHistoricalLocation, setThingLocations } from './thing-locations.js';
import { featureOfInterestFor } from './feature-of-interest.js';
import {
  afterStreamLinked, checkMultiDatastream, checkObservationResult, checkOneStream, otherStreamCleared, refuseLinkFromObservedProperty,
} from './multi-datastream.js';

/**
 * Creating an entity with everything nested in it (a Thing with its Locations and Datastreams,
 * each with its Sensor, ObservedProperty and Observations), inside the caller's transaction so
 * that a fault anywhere creates nothing. To-one links are made first (their ids go into this
 * row), to-many ones after (their rows point at this one), in the model's order so that a
 * Thing's Locations exist before its Observations need one for their FeatureOfInterest.
 */

const fieldOf = (parsed: ParsedEntity, nav: NavigationDef) => (parsed.field ? `${parsed.field}.${nav.name}` : nav.name);

/** The id an input stands for: the linked entity (checked to exist) or the one it creates. */
async function idOf(w: WriteContext, nav: NavigationDef, input: EntityInput): Promise<number> {
  if (input.kind === 'ref') {
    await checkLinked(w, nav.target, input.id, input.field);
    return input.id;
  }
  return createEntity(w, input.parsed);
}

export async function createEntity(w: WriteContext, parsed: ParsedEntity): Promise<number> {
  const entity = parsed.entity;
  const assignments: [string, RawBuilder<unknown>][] = [];
  for (const [property, value] of parsed.values) assignments.push(...columnValues(property, value));
  for (const property of entity.properties) {
    if (property.defaultsToNow && !parsed.values.has(property)) {
      assignments.push([`${property.column}_start`, sql`now()`], [`${property.column}_end`, sql`now()`]);
    }
  }
  const linked = new Map<string, number>();
  for (const nav of entity.navigations) {
    if (nav.join.kind !== 'fkHere') continue;
    const input = parsed.toOne.get(nav);
    let id: number | undefined = input ? await idOf(w, nav, input) : undefined;
    if (id === undefined && entity === ENTITIES.Observations && nav.name === 'FeatureOfInterest') {
      // The model lists Datastream and MultiDatastream before FeatureOfInterest, so their ids are known here.
      checkOneStream(linked, parsed.field);
      const datastreamId = linked.get('Datastream');
      const multiId = linked.get('MultiDatastream');
      if (datastreamId !== undefined) id = await featureOfInterestFor(w, datastreamId, fieldOf(parsed, nav));
      else if (multiId !== undefined) id = await featureOfInterestFor(w, multiId, fieldOf(parsed, nav), 'MultiDatastreams');
    }
    if (id === undefined) {
      if (nav.required) throw validationFailed(fieldOf(parsed, nav), 'is required');
      continue;
    }
    linked.set(nav.name, id);
    assignments.push([nav.join.column, sql`${id}`]);
  }
  if (entity === ENTITIES.Observations) checkOneStream(linked, parsed.field);
  const id = await insertRow(w, entity, assignments);
  recordChange(w, entity, id, 'create');
  await linkToMany(w, entity, id, parsed, false);
  // Only a MultiDatastream's Observation has a result to fit; a Datastream's skips the query, which
  // would run while the insert holds its stream's row lock (derived.ts), a round trip per write.
  if (entity === ENTITIES.Observations && linked.has('MultiDatastream')) await checkObservationResult(w, id, parsed.field);
  if (entity === ENTITIES.MultiDatastreams) await checkMultiDatastream(w, id, parsed.field);
  if (entity === ENTITIES.HistoricalLocations) await moveThingToHistoricalLocation(w, id);
  return id;
}

/**
 * The to-many navigations of a created or updated entity. `replace` (an update) makes the
 * listed Locations a Thing's only current ones; a create only adds.
 */
export async function linkToMany(w: WriteContext, entity: EntityDef, id: number, parsed: ParsedEntity, replace: boolean) {
  refuseLinkFromObservedProperty(parsed);
  for (const nav of entity.navigations) {
    const inputs = parsed.toMany.get(nav);
    if (!inputs?.length) continue;
    const target = ENTITIES[nav.target];
    if (nav.join.kind === 'fkThere') {
      for (const input of inputs) {
        if (input.kind === 'new') {
          // The child links back to this entity through its to-one navigation.
          const inverse = target.navigations.find((n) => n.name === nav.inverse)!;
          input.parsed.toOne.set(inverse, { kind: 'ref', id, field: fieldOf(parsed, nav) });
          await createEntity(w, input.parsed);
        } else {
          await checkLinked(w, nav.target, input.id, input.field);
          await sql`update ${tableOf(w.ctx, target)} set ${sql.id(nav.join.column)} = ${id}${otherStreamCleared(target, nav.join.column)}
            where id = ${input.id}`.execute(w.trx);
          await afterStreamLinked(w, target, input.id, nav.join.column);
          // Its link changed, none of its properties.
          recordChange(w, target, input.id, 'update', []);
        }
      }
      continue;
    }
    if (nav.join.kind !== 'link') continue;
    const ids: number[] = [];
    for (const input of inputs) ids.push(await idOf(w, nav, input));
    if (nav.join.table === 'thing_locations') {
      if (entity === ENTITIES.Things) await setThingLocations(w, id, ids, replace);
      // A Location placed at a Thing becomes that Thing's current Location.
      else for (const thingId of ids) await setThingLocations(w, thingId, [id], true);
    } else {
      await sql`insert into ${sql.id(w.ctx.schema, nav.join.table)} (${sql.id(nav.join.here)}, ${sql.id(nav.join.there)})
        select ${id}, unnest(${ids}::bigint[]) on conflict do nothing`.execute(w.trx);
    }
  }
}
