import type { StaServer } from '../../sta/types.js';
import { publicBaseOf, type PayloadRoute } from '../route-table.js';
import type { StaTopic } from './topics.js';
import { depthExceededAt } from '../../http/json-body.js';

export interface PublishLog {
  info(details: object, message: string): void;
  debug(details: object, message: string): void;
}

/**
 * A PUBLISH the caller may write (OGC 18-088 §14.3): the JSON message is created in the collection
 * the topic names, exactly as an HTTP POST to that path would (`…/Datastreams(7)/Observations`
 * links the new Observation to Datastream 7). MQTT 3.1.1 has no channel to answer an error on, so
 * a message that is not JSON, a topic that is not a collection, or an entity the server refuses is
 * logged and dropped; the connection stays open.
 */
export async function createFromPublish(
  sta: StaServer,
  dataApiUrl: string,
  route: PayloadRoute,
  topic: StaTopic,
  payload: Buffer,
  rights: { read: boolean; write: boolean },
  log: PublishLog,
  /** The data API's JSON depth limit (DATA_API_JSON_MAX_DEPTH), for messages as for HTTP bodies. */
  maxJsonDepth: number,
): Promise<void> {
  const where = { datasetId: route.datasetId, slug: route.slug, path: topic.path };
  if (topic.kind !== 'collection' || topic.select) return log.info(where, 'MQTT publish dropped: only an entity set or a navigation collection (without $select) takes new entities');
  const text = payload.toString('utf8');
  // Checked before parsing, as HTTP bodies are: the SensorThings server walks the entity recursively.
  if (depthExceededAt(text, maxJsonDepth) >= 0) return log.info(where, `MQTT publish dropped: the message nests deeper than ${maxJsonDepth} levels`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return log.info(where, 'MQTT publish dropped: the message is not JSON');
  }
  try {
    const answer = await sta.handle({
      method: 'POST',
      path: topic.path,
      query: '',
      body,
      // Nobody reads the answer (subscribers learn of the entity through the change feed): skip the re-read.
      preferMinimal: true,
      baseUrl: publicBaseOf(dataApiUrl, route),
      schema: route.storageSchema,
      rights,
    });
    log.debug({ ...where, location: answer.headers?.['location'] }, 'MQTT publish created an entity');
  } catch (error) {
    log.info({ ...where, err: { message: (error as Error).message } }, 'MQTT publish dropped: the SensorThings server refused the entity');
  }
}
