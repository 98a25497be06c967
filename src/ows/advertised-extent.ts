import type { LayerExtent } from './collections.repo.js';

/**
 * The extent capabilities advertise for a collection: its data's box grown by 1% of the span on
 * each side. A GIS client that zooms to a layer asks for exactly the advertised box, and MapServer
 * leaves out a point within half a pixel of the map's edge: on the data's own box the outermost
 * row and column of points were not drawn. The collection routes' `bbox` stays the data's own.
 */

type Box = readonly [number, number, number, number];

/** 1% of the span, on each side. */
const GROWTH = 0.01;
/** The least growth in degrees: a single point's box (no span) still becomes a box. */
const LEAST_DEGREES = 1e-6;
/** The least growth in a projected CRS's units (metres for every one we offer): about 1e-6 degrees. */
const LEAST_PROJECTED = 0.1;

export function grownBox(box: Box, least: number, limits?: Box): [number, number, number, number] {
  const dx = Math.max((box[2] - box[0]) * GROWTH, least);
  const dy = Math.max((box[3] - box[1]) * GROWTH, least);
  const grown: [number, number, number, number] = [box[0] - dx, box[1] - dy, box[2] + dx, box[3] + dy];
  if (!limits) return grown;
  return [Math.max(grown[0], limits[0]), Math.max(grown[1], limits[1]), Math.min(grown[2], limits[2]), Math.min(grown[3], limits[3])];
}

const WORLD: Box = [-180, -90, 180, 90];

/** The advertised extent of a layer: WGS 84 grown within the world, the native box grown in its own units. */
export function advertisedExtent(extent: LayerExtent, srid: number): LayerExtent {
  return {
    wgs84: grownBox(extent.wgs84, LEAST_DEGREES, WORLD),
    native: srid === 4326 || srid === 4258 ? grownBox(extent.native, LEAST_DEGREES, WORLD) : grownBox(extent.native, LEAST_PROJECTED),
  };
}
