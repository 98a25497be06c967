import type { StaServer } from '../../sta/types.js';
import { publicBaseOf, type PayloadRoute } from '../route-table.js';
import { TO_ONE_LINKS } from './topics.js';

/** A changed entity as a GET of it answers, with the ids of its to-one links (they name topics). */
export interface FoundEntity {
  /** The entity's JSON, exactly as `GET /{set}({id})` serializes it. */
  text: string;
  entity: Record<string, unknown>;
  /** Navigation name (`Datastream`) → the linked entity's id. */
  linkIds: Map<string, number>;
}

/**
 * The most ids one collection read asks for. The STA server serves at most `maxTop` (1000 by
 * default) per page; staying well under it means a chunk never comes back paged.
 */
const MAX_IDS_PER_READ = 500;

/**
 * Reads many changed entities of one route and entity set with one collection GET per chunk of
 * ids (`$filter=id eq 1 or id eq 2 …`), through the STA server like any client, so that a
 * message is what a GET answers. The server's parser keeps a chain of `or` flat (one level of
 * depth), and a collection entity is serialized by the same code as a single one (selfLink and
 * navigation links included); the `$expand` of the to-one links' ids is removed again, as the
 * single GET it stands for has none. Ids not in the answer were deleted meanwhile: they are
 * simply absent from the result.
 */
export async function findEntities(
  sta: StaServer, dataApiUrl: string, route: PayloadRoute, entitySet: string, ids: readonly number[], filterMaxBytes: number,
): Promise<Map<number, FoundEntity>> {
  const links = TO_ONE_LINKS[entitySet] ?? [];
  // Only the ids of the to-one links are asked for: they name the navigation collections.
  const expand = links.length > 0 ? `&$expand=${encodeURIComponent(links.map((link) => `${link.navigation}($select=id)`).join(','))}` : '';
  const found = new Map<number, FoundEntity>();
  for (const chunk of chunkIds(ids, filterMaxBytes)) {
    const filter = chunk.map((id) => `id eq ${id}`).join(' or ');
    const answer = await sta.handle({
      method: 'GET',
      path: `/${entitySet}`,
      query: `$filter=${encodeURIComponent(filter)}&$top=${chunk.length}${expand}`,
      body: undefined,
      preferMinimal: false,
      baseUrl: publicBaseOf(dataApiUrl, route),
      schema: route.storageSchema,
      rights: { read: true, write: false },
    });
    const value = (answer.body as { value?: unknown } | undefined)?.value;
    if (answer.status !== 200 || !Array.isArray(value)) throw new Error(`reading changed ${entitySet} answered ${answer.status}`);
    for (const item of value as Array<Record<string, unknown>>) {
      const entity = { ...item };
      const linkIds = new Map<string, number>();
      for (const link of links) {
        const linked = entity[link.navigation] as Record<string, unknown> | undefined;
        if (linked && typeof linked['@iot.id'] === 'number') linkIds.set(link.navigation, linked['@iot.id']);
        delete entity[link.navigation];
      }
      if (typeof entity['@iot.id'] === 'number') found.set(entity['@iot.id'], { text: JSON.stringify(entity), entity, linkIds });
    }
  }
  return found;
}

/**
 * Splits ids into chunks whose filter (`id eq 1 or id eq 2 …`, ASCII) stays within `maxBytes`
 * (STA_EXPRESSION_MAX_BYTES) and MAX_IDS_PER_READ.
 */
export function chunkIds(ids: readonly number[], maxBytes: number): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  let bytes = 0;
  for (const id of ids) {
    const term = `id eq ${id}`.length;
    const more = chunk.length === 0 ? term : term + ' or '.length;
    if (chunk.length > 0 && (bytes + more > maxBytes || chunk.length >= MAX_IDS_PER_READ)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    bytes += chunk.length === 0 ? term : more;
    chunk.push(id);
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
