import { sql, type RawBuilder } from 'kysely';
import type { Geometry, SpatialOperand } from './ast.js';
import { bind, column, GEOMETRY, queryableType, type CompileContext } from './context.js';
import { cql2Error, shown } from './errors.js';

/**
 * S_INTERSECTS between the geometry queryable and a literal. The literal goes to PostGIS as one
 * parameter, GeoJSON text rebuilt from the parsed numbers (or the four numbers of a BBOX), in the
 * filter's CRS, and is transformed to the collection's SRID: the column is left alone so that its
 * spatial index answers `st_intersects`.
 *
 * CRS84 (`literalSrid` 4326) is longitude/latitude, which is also the axis order PostGIS gives
 * EPSG:4326; other SRIDs are read as x/y in PostGIS's order, and literals written latitude first
 * (`latitudeFirst`) are swapped to that order before anything else. Positions outside longitude
 * -180..180 or latitude -90..90 are a 400 for 4326 (PROJ would answer them with an error, or a
 * wrong place). A literal is expected to lie where the collection's projection is defined: a
 * box around the whole earth has no faithful image in a UTM zone.
 */

const WGS84 = 4326;

export function intersects(ctx: CompileContext, left: SpatialOperand, right: SpatialOperand, pos: number): RawBuilder<unknown> {
  const property = left.kind === 'property' ? left : right.kind === 'property' ? right : undefined;
  const literal = left.kind !== 'property' ? left : right.kind !== 'property' ? right : undefined;
  if (!property) throw cql2Error(`S_INTERSECTS needs the ${GEOMETRY} queryable as one of its arguments`, pos);
  if (!literal) throw cql2Error(`S_INTERSECTS compares the ${GEOMETRY} queryable with a geometry literal (WKT or BBOX), not two properties`, pos);
  if (property.name !== GEOMETRY) {
    // Resolved for its error: an unknown name is told as such, an attribute as not a geometry.
    const type = queryableType(ctx, property);
    throw cql2Error(`S_INTERSECTS applies to the ${GEOMETRY} queryable, not the ${type} property ${shown(property.name)}`, property.pos);
  }
  return sql`st_intersects(${column('geom')}, ${literalSql(ctx, literal)})`;
}

type Literal = Exclude<SpatialOperand, { kind: 'property' }>;

function literalSql(ctx: CompileContext, written: Literal): RawBuilder<unknown> {
  const literal = ctx.latitudeFirst ? swapped(written) : written;
  const geographic = ctx.literalSrid === WGS84;
  const srid = () => bind(ctx, ctx.literalSrid, 'integer', literal.pos);
  let geometry: RawBuilder<unknown>;
  let segment: number | undefined;
  if (literal.kind === 'bbox') {
    const [minx, miny, maxx, maxy] = literal.value;
    if (geographic) checkLonLat(literal.value, literal.pos, ctx.latitudeFirst);
    if (miny > maxy) throw cql2Error('a BBOX must have miny ≤ maxy', literal.pos);
    const envelope = (x0: number, x1: number) => {
      const n = (value: number) => bind(ctx, value, 'double precision', literal.pos);
      return sql`st_makeenvelope(${n(x0)}, ${n(miny)}, ${n(x1)}, ${n(maxy)}, ${srid()})`;
    };
    if (minx <= maxx) {
      geometry = envelope(minx, maxx);
      segment = segmentLength(Math.max(maxx - minx, maxy - miny), 2 * (maxx - minx + maxy - miny));
    } else if (geographic) {
      // West above east: the box crosses the antimeridian (OGC API – Features), two boxes on the map.
      geometry = sql`st_collect(${envelope(minx, 180)}, ${envelope(-180, maxx)})`;
      segment = segmentLength(Math.max(360 - minx + maxx, maxy - miny), 2 * (360 - minx + maxx + 2 * (maxy - miny)));
    } else {
      throw cql2Error('a BBOX must have minx ≤ maxx', literal.pos);
    }
  } else {
    const positions = positionsOf(literal.value);
    for (const position of positions) {
      // The WKT reader leaves `1e999` as Infinity, which has no JSON.
      if (!position.every(Number.isFinite)) throw cql2Error('a coordinate of the geometry is out of range', literal.pos);
      if (geographic) checkLonLat(position, literal.pos, ctx.latitudeFirst);
    }
    const json = bind(ctx, JSON.stringify(literal.value), 'text', literal.pos);
    geometry = sql`st_setsrid(st_force2d(st_geomfromgeojson(${json})), ${srid()})`;
    segment = literal.value.type === 'Point' || literal.value.type === 'MultiPoint' ? undefined : segmentFor(literal.value);
  }
  if (ctx.literalSrid === ctx.srid) return geometry;
  const target = bind(ctx, ctx.srid, 'integer', literal.pos);
  if (segment === undefined || !(segment > 0)) return sql`st_transform(${geometry}, ${target})`;
  // Transforming moves the vertices only, and a straight edge in one CRS is a curve in another
  // (a parallel of latitude in UTM): edges are cut into pieces first, so that the shape
  // transformed follows the one the client drew.
  return sql`st_transform(st_segmentize(${geometry}, ${bind(ctx, segment, 'double precision', literal.pos)}), ${target})`;
}

function checkLonLat(values: readonly number[], pos: number, latitudeFirst: boolean): void {
  const order = latitudeFirst ? 'written latitude first' : 'CRS84 is longitude first';
  for (let k = 0; k + 1 < values.length; k += 2) {
    if (Math.abs(values[k]!) > 180 || Math.abs(values[k + 1]!) > 90) {
      throw cql2Error(`a position lies outside longitude -180..180 or latitude -90..90 (${order})`, pos);
    }
  }
}

/**
 * The longest edge to keep before transforming: a 32nd of the literal's extent, so that a box
 * becomes at most ~128 edges; but no shorter than total length / 4096, so that a literal with
 * many long edges does not become millions of vertices.
 */
function segmentLength(extent: number, totalLength: number): number {
  return Math.max(extent / 32, totalLength / 4096);
}

function segmentFor(geometry: Geometry): number | undefined {
  let minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity, total = 0;
  for (const line of linesOf(geometry)) {
    for (let k = 0; k < line.length; k++) {
      const [x, y] = line[k]! as [number, number];
      minx = Math.min(minx, x); maxx = Math.max(maxx, x); miny = Math.min(miny, y); maxy = Math.max(maxy, y);
      if (k > 0) total += Math.hypot(x - line[k - 1]![0]!, y - line[k - 1]![1]!);
    }
  }
  return total > 0 ? segmentLength(Math.max(maxx - minx, maxy - miny), total) : undefined;
}

type Position = number[];

/** The lines and rings of a geometry (a point is a line of one position). */
function linesOf(geometry: Geometry): Position[][] {
  if (geometry.type === 'GeometryCollection') return geometry.geometries.flatMap(linesOf);
  const c = geometry.coordinates;
  switch (geometry.type) {
    case 'Point': return [[c as Position]];
    case 'MultiPoint': return (c as Position[]).map((position) => [position]);
    case 'LineString': return [c as Position[]];
    case 'Polygon': case 'MultiLineString': return c as Position[][];
    case 'MultiPolygon': return (c as Position[][][]).flat();
  }
}

function positionsOf(geometry: Geometry): Position[] {
  return linesOf(geometry).flat();
}

/** A literal written latitude first, as x/y. */
function swapped(literal: Literal): Literal {
  if (literal.kind === 'bbox') {
    const [a, b, c, d] = literal.value;
    return { ...literal, value: [b, a, d, c] };
  }
  return { ...literal, value: mapPositions(literal.value, ([y, x, ...z]) => [x!, y!, ...z]) };
}

function mapPositions(geometry: Geometry, swap: (position: Position) => Position): Geometry {
  if (geometry.type === 'GeometryCollection') return { type: 'GeometryCollection', geometries: geometry.geometries.map((g) => mapPositions(g, swap)) };
  const c = geometry.coordinates;
  switch (geometry.type) {
    case 'Point': return { type: geometry.type, coordinates: swap(c as Position) };
    case 'LineString': case 'MultiPoint': return { type: geometry.type, coordinates: (c as Position[]).map(swap) };
    case 'Polygon': case 'MultiLineString': return { type: geometry.type, coordinates: (c as Position[][]).map((line) => line.map(swap)) };
    case 'MultiPolygon': return { type: geometry.type, coordinates: (c as Position[][][]).map((polygon) => polygon.map((ring) => ring.map(swap))) };
  }
}
