/** Request bodies of the eight entity types, the smallest the standard accepts, with overrides. */

export const point = (x: number, y: number) => ({ type: 'Point', coordinates: [x, y] });

export const location = (name = 'Town hall', at = point(8.68, 50.11)) =>
  ({ name, description: `${name}, roof`, encodingType: 'application/geo+json', location: at });

export const sensor = (name = 'DHT22') => ({ name, description: 'temperature sensor', encodingType: 'application/pdf', metadata: 'https://example.org/dht22.pdf' });

export const observedProperty = (name = 'Air temperature') =>
  ({ name, definition: 'http://vocab.nerc.ac.uk/collection/P07/current/CFSN0023/', description: 'temperature of the air' });

export const datastream = (name = 'Roof temperature', extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} every minute`,
  unitOfMeasurement: { name: 'degree Celsius', symbol: '°C', definition: 'http://qudt.org/vocab/unit/DEG_C' },
  observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
  Sensor: sensor(),
  ObservedProperty: observedProperty(),
  ...extra,
});

export const thing = (name = 'Weather station', extra: Record<string, unknown> = {}) =>
  ({ name, description: `${name} on the roof`, properties: { owner: 'city' }, ...extra });

export const feature = (name = 'Roof') => ({ name, description: 'the roof', encodingType: 'application/geo+json', feature: point(8.68, 50.11) });

/** A Thing with a Location and one Datastream holding `n` Observations one hour apart from 2020-01-01. */
export const stationWithObservations = (n: number, name = 'Weather station') =>
  thing(name, {
    Locations: [location()],
    Datastreams: [datastream('Roof temperature', {
      Observations: Array.from({ length: n }, (_, i) => ({
        result: 20 + i,
        phenomenonTime: new Date(Date.UTC(2020, 0, 1, i)).toISOString(),
      })),
    })],
  });

export const OM_COMPLEX_OBSERVATION = 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_ComplexObservation';
const OM_MEASUREMENT = 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement';

/** A MultiDatastream of wind: speed and direction, with its Sensor and two new ObservedProperties. */
export const multiDatastream = (name = 'Wind', extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} every minute`,
  observationType: OM_COMPLEX_OBSERVATION,
  unitOfMeasurements: [
    { name: 'metre per second', symbol: 'm/s', definition: 'http://qudt.org/vocab/unit/M-PER-SEC' },
    { name: 'degree', symbol: '°', definition: 'http://qudt.org/vocab/unit/DEG' },
  ],
  multiObservationDataTypes: [OM_MEASUREMENT, OM_MEASUREMENT],
  Sensor: sensor('Anemometer'),
  ObservedProperties: [observedProperty('Wind speed'), observedProperty('Wind direction')],
  ...extra,
});
