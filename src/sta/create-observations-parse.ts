import { AppError, validationFailed } from '../errors.js';
import { ENTITIES, propertyOf, type PropertyDef } from './model.js';
import { bindProperty, type BoundValue } from './validate.js';

/**
 * The body of `CreateObservations` checked whole and turned into one column per stored field,
 * ready to bind as array parameters. Every value goes through the same check as the property's
 * value in a single Observation's create (`bindProperty`, which `parseEntity` applies), so both
 * paths accept exactly the same values; the components are matched to their properties once per
 * group, not per row (a row is one of thousands).
 *
 * A fault in the request's shape (not an array, a group without Datastream or MultiDatastream, or
 * with both, unknown components, a `dataArray@iot.count` that does not match) refuses the whole
 * request: 400 naming it. A fault in one row (its length, one of its values) refuses that row only:
 * it is left out of the columns and its message, naming the value's position
 * (`[0].dataArray[17][1]`), is kept for the answer. (Whether a MultiDatastream row's result has the
 * declared length needs the stored MultiDatastream: create-observations.ts checks it, per row too.)
 */

const FOI_COMPONENT = 'FeatureOfInterest/id';
const REQUIRED_COMPONENTS = ['phenomenonTime', 'result'];
const PROPERTY_COMPONENTS = ['phenomenonTime', 'result', 'resultTime', 'resultQuality', 'validTime', 'parameters'];
const GROUP_FIELDS = new Set(['Datastream', 'MultiDatastream', 'components', 'dataArray', 'dataArray@iot.count']);

export interface ObservationGroup {
  /** The id of the group's Datastream, or of its MultiDatastream when `multi`. */
  datastreamId: number;
  multi: boolean;
  /** The index of `result` in its components (an error about a MultiDatastream's result names it). */
  resultComponent: number;
  /** Where the group is in the body: `[0]`. */
  field: string;
  /** Its rows, numbered over the whole body (every group's rows one after the other): `[first, end)`. */
  first: number;
  end: number;
  /** The index of `FeatureOfInterest/id` in its components, -1 when absent. */
  featureComponent: number;
}

/**
 * One entry per accepted row in every array (null where the row has no value), in body order;
 * `source` numbers each over the whole body. `refused` holds the message of each row left out.
 */
export interface ObservationColumns {
  groups: ObservationGroup[];
  /** How many rows the body holds, accepted or not. */
  total: number;
  refused: Map<number, string>;
  source: number[];
  /** Each row's Datastream, or null where it is a MultiDatastream's (then in `multiDatastream`). */
  datastream: (number | null)[];
  multiDatastream: (number | null)[];
  /** null: derive it from the Datastream's Thing's Location. */
  featureOfInterest: (number | null)[];
  phenomenonStart: string[];
  phenomenonEnd: string[];
  resultTime: (string | null)[];
  result: string[];
  resultQuality: (string | null)[];
  validStart: (string | null)[];
  validEnd: (string | null)[];
  parameters: (string | null)[];
}

/** Where a row (numbered over the whole body) is: `[0].dataArray[17]`. */
export function rowField(columns: Pick<ObservationColumns, 'groups'>, source: number): string {
  const group = columns.groups.find((g) => source >= g.first && source < g.end)!;
  return `${group.field}.dataArray[${source - group.first}]`;
}

/** The answer entry of a refused row: `error` first, as the standard's example and FROST-Server spell it. */
export const rowError = (field: string, message: string) => `error ${field}: ${message}`;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A positive integer id, given as a number or as its decimal text; undefined otherwise. */
function idValue(value: unknown): number | undefined {
  const id = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

const observationProperty = (name: string) => propertyOf(ENTITIES.Observations, name)!;

export function parseDataArrays(body: unknown): ObservationColumns {
  if (!Array.isArray(body) || body.length === 0) {
    throw validationFailed('body', 'must be a non-empty array of {"Datastream", "components", "dataArray"}');
  }
  const columns: ObservationColumns = {
    groups: [], total: 0, refused: new Map(), source: [], datastream: [], multiDatastream: [], featureOfInterest: [], phenomenonStart: [],
    phenomenonEnd: [], resultTime: [], result: [], resultQuality: [], validStart: [], validEnd: [], parameters: [],
  };
  body.forEach((raw, index) => parseGroup(raw, `[${index}]`, columns));
  return columns;
}

function parseComponents(raw: unknown, field: string): string[] {
  if (!Array.isArray(raw)) throw validationFailed(field, 'must be an array of component names');
  raw.forEach((name, j) => {
    if (typeof name !== 'string' || (name !== FOI_COMPONENT && !PROPERTY_COMPONENTS.includes(name))) {
      throw validationFailed(`${field}[${j}]`, `must be one of ${[...PROPERTY_COMPONENTS, FOI_COMPONENT].join(', ')}`);
    }
    if (raw.indexOf(name) !== j) throw validationFailed(`${field}[${j}]`, `${name} is listed twice`);
  });
  const missing = REQUIRED_COMPONENTS.find((name) => !raw.includes(name));
  if (missing) throw validationFailed(field, `must include ${missing}`);
  return raw as string[];
}

function parseGroup(raw: unknown, field: string, columns: ObservationColumns) {
  if (!isObject(raw)) throw validationFailed(field, 'must be an object with Datastream, components and dataArray');
  const unknown = Object.keys(raw).find((key) => !GROUP_FIELDS.has(key));
  if (unknown !== undefined) throw validationFailed(`${field}.${unknown}`, 'is not served here; give Datastream, components and dataArray');
  // A group names a Datastream or a MultiDatastream (the MultiDatastream extension), not both.
  const multi = raw['MultiDatastream'] !== undefined;
  if (multi && raw['Datastream'] !== undefined) throw validationFailed(`${field}.Datastream`, 'a group names a Datastream or a MultiDatastream, not both');
  const stream = multi ? 'MultiDatastream' : 'Datastream';
  const datastreamId = isObject(raw[stream]) ? idValue(raw[stream]['@iot.id']) : undefined;
  if (datastreamId === undefined) throw validationFailed(`${field}.${stream}`, 'must be {"@iot.id": <a positive integer>}');
  const components = parseComponents(raw['components'], `${field}.components`);
  const dataArray = raw['dataArray'];
  if (!Array.isArray(dataArray)) throw validationFailed(`${field}.dataArray`, 'must be an array of rows');
  const count = raw['dataArray@iot.count'];
  if (count !== undefined && count !== dataArray.length) {
    throw validationFailed(`${field}.dataArray@iot.count`, `is ${JSON.stringify(count)} but dataArray holds ${dataArray.length} rows`);
  }
  const featureComponent = components.indexOf(FOI_COMPONENT);
  const bound = components.flatMap((name, index) => (index === featureComponent ? [] : [{ index, property: observationProperty(name) }]));
  const first = columns.total;
  // Where a row or one of its values is, spelled out only for a fault (a row is one of thousands).
  const at = (r: number, component?: number) => `${field}.dataArray[${r}]${component === undefined ? '' : `[${component}]`}`;
  dataArray.forEach((row, r) => {
    const source = first + r;
    try {
      parseRow(row, r, at, components.length, bound, featureComponent, { id: datastreamId, multi }, columns);
      columns.source.push(source);
    } catch (error) {
      const fault = error instanceof AppError ? error.options.fieldErrors?.[0] : undefined;
      if (!fault) throw error;
      columns.refused.set(source, rowError(fault.field, fault.message));
    }
  });
  columns.total += dataArray.length;
  columns.groups.push({ datastreamId, multi, resultComponent: components.indexOf('result'), field, first, end: columns.total, featureComponent });
}

/**
 * One row's values into the columns. The components hold `result` and `phenomenonTime` (checked
 * per group), so the required properties are there; a fault names the value's position.
 */
function parseRow(
  row: unknown, r: number, at: (r: number, component?: number) => string, length: number,
  bound: { index: number; property: PropertyDef }[], featureComponent: number,
  stream: { id: number; multi: boolean }, columns: ObservationColumns,
) {
  if (!Array.isArray(row) || row.length !== length) {
    throw validationFailed(at(r), `must be an array of ${length} values, one per component`);
  }
  const values: Partial<Record<string, BoundValue>> = {};
  for (const { index, property } of bound) {
    try {
      values[property.name] = bindProperty(property, row[index], '');
    } catch (error) {
      const fault = error instanceof AppError ? error.options.fieldErrors?.[0] : undefined;
      throw fault ? validationFailed(at(r, index), fault.message) : error;
    }
  }
  let featureOfInterest: number | null = null;
  if (featureComponent >= 0 && row[featureComponent] !== null) {
    const id = idValue(row[featureComponent]);
    if (id === undefined) throw validationFailed(at(r, featureComponent), 'must be a FeatureOfInterest id (a positive integer) or null');
    featureOfInterest = id;
  }
  // Every check is behind us: only now does the row enter the columns (all of them, or none).
  const phenomenon = values['phenomenonTime'] as { start: string; end: string };
  const valid = (values['validTime'] ?? null) as { start: string | null; end: string | null } | null;
  columns.datastream.push(stream.multi ? null : stream.id);
  columns.multiDatastream.push(stream.multi ? stream.id : null);
  columns.featureOfInterest.push(featureOfInterest);
  columns.phenomenonStart.push(phenomenon.start);
  columns.phenomenonEnd.push(phenomenon.end);
  columns.resultTime.push((values['resultTime'] ?? null) as string | null);
  columns.result.push(values['result'] as string);
  columns.resultQuality.push((values['resultQuality'] ?? null) as string | null);
  columns.validStart.push(valid?.start ?? null);
  columns.validEnd.push(valid?.end ?? null);
  columns.parameters.push((values['parameters'] ?? null) as string | null);
}
