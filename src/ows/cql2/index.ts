import type { RawBuilder } from 'kysely';
import type { AttributeType } from '../types.js';
import { compileCondition } from './compile.js';
import { checkBytes } from './limits.js';
import { parseCql2 } from './parse.js';

/**
 * CQL2 text filters (OGC API – Features Part 3: Basic CQL2, Advanced Comparison Operators and
 * Basic Spatial Functions) on a feature collection, compiled to a parameterised SQL condition.
 * Every error is a 400 VALIDATION_FAILED on the field `filter` naming the position at fault.
 */

export interface Cql2Target {
  /** The queryables: attribute name → type (the column has the same name). The geometry queryable is named `geometry` (column `geom`). */
  properties: Readonly<Record<string, AttributeType>>;
  /** The SRID of the geom column. */
  srid: number;
}

export interface Cql2Options {
  /**
   * SRID of geometry literals (filter-crs): 4326 means CRS84 longitude/latitude order (the
   * default); any other EPSG code as x/y in PostGIS's axis order. The caller checks that the
   * SRID is one PostGIS knows (spatial_ref_sys): an unknown one fails in the database.
   */
  literalSrid?: number;
  /**
   * The literals' positions are latitude first (y x), as EPSG defines its geographic CRSs
   * (`http://www.opengis.net/def/crs/EPSG/0/4326`, unlike CRS84): WKT positions and BBOX corners
   * are swapped to x/y before anything else. False by default.
   */
  literalLatitudeFirst?: boolean;
  /** Largest filter text in bytes and deepest nesting (parentheses, NOT, AND/OR chains); beyond: 400. */
  maxBytes: number;
  maxDepth: number;
}

/** The WHERE condition of a CQL2 text filter on this collection. */
export function compileCql2Text(text: string, target: Cql2Target, options: Cql2Options): RawBuilder<unknown> {
  // The size first, before any work that grows with the text.
  checkBytes(text, options.maxBytes);
  const condition = parseCql2(text, options.maxDepth);
  return compileCondition({
    properties: target.properties, srid: target.srid, literalSrid: options.literalSrid ?? 4326,
    latitudeFirst: options.literalLatitudeFirst ?? false, values: 0,
  }, condition);
}
