/**
 * The parsed form of a CQL2 text filter (`parse.ts` builds it, `compile.ts` turns it into SQL).
 * Positions are 0-based offsets into the filter text, for error messages.
 */

export type ComparisonOperator = '=' | '<>' | '<' | '>' | '<=' | '>=';

/** A GeoJSON geometry object, rebuilt from the WKT's parsed numbers. */
export type Geometry =
  | { type: 'Point' | 'LineString' | 'Polygon' | 'MultiPoint' | 'MultiLineString' | 'MultiPolygon'; coordinates: unknown }
  | { type: 'GeometryCollection'; geometries: Geometry[] };

/** A queryable by name: an attribute, or `geometry` for the geom column. */
export interface PropertyName { kind: 'property'; name: string; pos: number }

/** What a comparison, LIKE, BETWEEN, IN or IS NULL compares. */
export type Scalar =
  | PropertyName
  | { kind: 'string'; value: string; pos: number }
  /** `integer`: written without a fraction or exponent (and within ±(2^53 − 1), which the lexer checks). */
  | { kind: 'number'; value: number; integer: boolean; pos: number }
  | { kind: 'boolean'; value: boolean; pos: number }
  /** `TIMESTAMP('…')`, validated and with its zone. */
  | { kind: 'timestamp'; value: string; pos: number }
  /** `DATE('…')`, validated. */
  | { kind: 'date'; value: string; pos: number };

/** An argument of S_INTERSECTS. */
export type SpatialOperand =
  | PropertyName
  | { kind: 'geometry'; value: Geometry; pos: number }
  /** `BBOX(minx, miny, maxx, maxy)`. */
  | { kind: 'bbox'; value: [number, number, number, number]; pos: number };

export type Condition =
  /** A chain of one operator, `a AND b AND c` as one node with three operands. */
  | { kind: 'and' | 'or'; operands: Condition[]; pos: number }
  | { kind: 'not'; operand: Condition; pos: number }
  /** `TRUE` or `FALSE` standing alone as a condition. */
  | { kind: 'constant'; value: boolean; pos: number }
  | { kind: 'compare'; op: ComparisonOperator; left: Scalar; right: Scalar; pos: number }
  | { kind: 'like'; negated: boolean; subject: Scalar; pattern: Scalar & { kind: 'string' }; pos: number }
  | { kind: 'between'; negated: boolean; subject: Scalar; low: Scalar; high: Scalar; pos: number }
  | { kind: 'in'; negated: boolean; subject: Scalar; list: Scalar[]; pos: number }
  | { kind: 'isNull'; negated: boolean; subject: Scalar; pos: number }
  | { kind: 'intersects'; left: SpatialOperand; right: SpatialOperand; pos: number };
