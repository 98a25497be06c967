import assert from 'node:assert/strict';
import type { PublishedDataset } from '../helpers/sta-dataset.js';

/** An inline FeatureOfInterest for an Observation. */
export const feature = (name: string) => ({
  name, description: `feature ${name}`, encodingType: 'application/geo+json',
  feature: { type: 'Point', coordinates: [7.1, 50.7] },
});

/** A Thing with one Datastream (and its Sensor and ObservedProperty), as a deep insert's body. */
export const WEATHER_STATION = {
  name: 'station', description: 'a weather station',
  Datastreams: [{
    name: 'temperature', description: 'air temperature', observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
    unitOfMeasurement: { name: 'degree Celsius', symbol: '°C', definition: 'http://unitsofmeasure.org/ucum.html#para-30' },
    Sensor: { name: 'thermometer', description: 'a thermometer', encodingType: 'application/pdf', metadata: 'https://example.org/thermometer.pdf' },
    ObservedProperty: { name: 'temperature', definition: 'https://example.org/temperature', description: 'air temperature' },
  }],
};

/** A Thing with one Datastream (and its Sensor and ObservedProperty), created over HTTP. */
export async function createSensorChain(dataset: PublishedDataset): Promise<{ thingId: number; datastreamId: number }> {
  const thing = await dataset.request('POST', '/Things', WEATHER_STATION);
  assert.equal(thing.statusCode, 201, thing.body);
  const thingId = thing.json()['@iot.id'];
  const datastreams = await dataset.request('GET', `/Things(${thingId})/Datastreams`);
  assert.equal(datastreams.statusCode, 200, datastreams.body);
  return { thingId, datastreamId: datastreams.json().value[0]['@iot.id'] };
}

