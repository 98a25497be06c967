import type { PathSegment, ResourcePath } from './ast.js';
import { StaQueryError } from './errors.js';

/**
 * The resource path below the service root (already percent-decoded), e.g.
 * `/Things(1)/Datastreams` or `/Datastreams(3)/name/$value`. This checks the shape only; whether
 * an entity set or navigation exists for the entity type at hand is the store's question (it
 * answers 404). A navigation without an id is taken as a collection when its name is one of the
 * standard's entity sets, and as a to-one navigation (`Thing`, `Datastream`) otherwise.
 */

const COLLECTIONS = new Set([
  'Things', 'Locations', 'HistoricalLocations', 'Datastreams', 'MultiDatastreams', 'Sensors',
  'ObservedProperties', 'Observations', 'FeaturesOfInterest',
]);

const SEGMENT = /^([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$/s;
const ID = /^\d+$/;

export function parseResourcePath(path: string): ResourcePath {
  const fail = (pos: number, token: string, message: string): never => {
    throw new StaQueryError('path', pos, token, message);
  };
  const segments: ResourcePath = [];
  let pos = path.startsWith('/') ? 1 : 0;
  const body = path.slice(pos).replace(/\/$/, '');
  if (body === '') return segments;

  for (const text of body.split('/')) {
    const previous = segments[segments.length - 1];
    if (text === '') fail(pos, '/', 'empty path segment');
    if (previous?.kind === 'ref' || previous?.kind === 'value') fail(pos, text, `nothing may follow ${previous.kind === 'ref' ? '$ref' : '$value'}`);
    if (text === '$ref') {
      if (previous?.kind !== 'entitySet' && previous?.kind !== 'navigation') fail(pos, text, '$ref must follow an entity set or a navigation');
      segments.push({ kind: 'ref', pos });
    } else if (text === '$value') {
      if (previous?.kind !== 'property') fail(pos, text, '$value must follow a property');
      segments.push({ kind: 'value', pos });
    } else {
      segments.push(parseNamed(text, pos, previous, fail));
    }
    pos += text.length + 1;
  }
  return segments;
}

function parseNamed(text: string, pos: number, previous: PathSegment | undefined, fail: (pos: number, token: string, message: string) => never): PathSegment {
  const m = SEGMENT.exec(text);
  if (!m) {
    const paren = text.indexOf('(');
    if (paren > 0 && !text.endsWith(')')) fail(pos + text.length, '', "')' expected");
    return fail(pos, text, 'invalid path segment');
  }
  const name = m[1]!;
  const idText = m[2];
  const isUpper = name[0]! >= 'A' && name[0]! <= 'Z';
  if (previous && !addressesOneEntity(previous)) {
    fail(pos, text, previous.kind === 'property' ? 'only $value may follow a property' : 'a collection must be given an id before going on');
  }
  if (!previous && !isUpper) fail(pos, text, 'the path must start with an entity set');
  const id = idText === undefined ? undefined : parseId(idText, pos + name.length + 1, fail);
  if (!isUpper) {
    if (id !== undefined) fail(pos + name.length, '(', 'a property takes no id');
    return { kind: 'property', name, pos };
  }
  if (previous && id !== undefined && !COLLECTIONS.has(name)) fail(pos + name.length, '(', `${name} is a single entity and takes no id`);
  const kind = previous ? 'navigation' : 'entitySet';
  return id === undefined ? { kind, name, pos } : { kind, name, id, pos };
}

function addressesOneEntity(segment: PathSegment): boolean {
  if (segment.kind === 'entitySet') return segment.id !== undefined;
  if (segment.kind === 'navigation') return segment.id !== undefined || !COLLECTIONS.has(segment.name);
  return false;
}

/** Ids are bigint identities: plain non-negative integers that a JavaScript number holds exactly. */
function parseId(text: string, pos: number, fail: (pos: number, token: string, message: string) => never): number {
  if (!ID.test(text)) return fail(pos, text, text === '' ? 'an id is expected' : 'an id must be a non-negative integer');
  const id = Number(text);
  if (!Number.isSafeInteger(id)) fail(pos, text, 'the id is too large');
  return id;
}
