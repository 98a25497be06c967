import { StaQueryError } from './errors.js';

/**
 * Well-known text to a GeoJSON geometry object, for `geography'POINT(1 2)'` literals. Only the
 * six simple types the standard's examples use; an optional `SRID=4326;` prefix is accepted and
 * dropped (GeoJSON is always WGS 84). Positions in errors are absolute: `offset` is where the
 * text starts inside the option value.
 */

export interface GeoJsonGeometry { type: string; coordinates: unknown }

type Position = number[];

const WHITE_SPACE = new Set([' ', '\t', '\n', '\r']);

const TYPES: Record<string, string> = {
  POINT: 'Point',
  LINESTRING: 'LineString',
  POLYGON: 'Polygon',
  MULTIPOINT: 'MultiPoint',
  MULTILINESTRING: 'MultiLineString',
  MULTIPOLYGON: 'MultiPolygon',
};

export function parseWkt(text: string, where: string, offset: number): GeoJsonGeometry {
  const reader = new WktReader(text, where, offset);
  return reader.geometry();
}

class WktReader {
  private i = 0;
  constructor(private readonly text: string, private readonly where: string, private readonly offset: number) {}

  geometry(): GeoJsonGeometry {
    this.skipSpace();
    const srid = /^SRID=\d+;/i.exec(this.text.slice(this.i));
    if (srid) this.i += srid[0].length;
    const start = this.i;
    const word = this.word();
    const type = TYPES[word.toUpperCase()];
    if (!type) this.fail(start, word, 'unknown WKT geometry type');
    // `POINT Z (1 2 3)`: the dimension follows from the positions themselves.
    const dimension = /^\s*(ZM|Z|M)\b/i.exec(this.text.slice(this.i));
    if (dimension) this.i += dimension[0].length;
    const coordinates = this.coordinatesOf(type!);
    this.skipSpace();
    if (this.i < this.text.length) this.fail(this.i, this.text.slice(this.i), 'unexpected text after the geometry');
    return { type: type!, coordinates };
  }

  private coordinatesOf(type: string): unknown {
    switch (type) {
      case 'Point': return this.point();
      case 'LineString': return this.positions(2);
      case 'Polygon': return this.list(() => this.ring());
      // Both `MULTIPOINT((1 2), (3 4))` and the older `MULTIPOINT(1 2, 3 4)` are in use.
      case 'MultiPoint': return this.list(() => (this.peek() === '(' ? this.point() : this.position()));
      case 'MultiLineString': return this.list(() => this.positions(2));
      default: return this.list(() => this.list(() => this.ring()));
    }
  }

  /** `(x y)`: exactly one position in parentheses. */
  private point(): Position {
    this.expect('(');
    const position = this.position();
    this.expect(')');
    return position;
  }

  /** A closed ring of at least four positions. */
  private ring(): Position[] {
    const start = this.i;
    const ring = this.positions(4);
    const first = ring[0]!, last = ring[ring.length - 1]!;
    if (first.some((v, k) => v !== last[k])) this.fail(start, this.text.slice(start, this.i), 'a polygon ring must be closed');
    return ring;
  }

  private positions(min: number): Position[] {
    return this.list(() => this.position(), min);
  }

  /** `( item, item, … )` with at least `min` items. */
  private list<T>(item: () => T, min = 1): T[] {
    this.expect('(');
    const items = [item()];
    while (this.peek() === ',') {
      this.i++;
      items.push(item());
    }
    const end = this.i;
    this.expect(')');
    if (items.length < min) this.fail(end, ')', `at least ${min} positions expected`);
    return items;
  }

  private position(): Position {
    const start = this.i;
    const values: number[] = [];
    for (;;) {
      this.skipSpace();
      const m = /^[-+]?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.i));
      if (!m) break;
      values.push(Number(m[0]));
      this.i += m[0].length;
    }
    if (values.length < 2 || values.length > 3) {
      this.skipSpace();
      this.fail(start, this.text.slice(start, this.i + 1).trim(), 'a position needs two or three numbers');
    }
    return values;
  }

  private word(): string {
    const m = /^[A-Za-z]+/.exec(this.text.slice(this.i));
    this.i += m ? m[0].length : 0;
    return m ? m[0] : this.text.slice(this.i, this.i + 1);
  }

  private peek(): string | undefined {
    this.skipSpace();
    return this.text[this.i];
  }

  private expect(char: string): void {
    if (this.peek() !== char) this.fail(this.i, this.text[this.i] ?? '', `'${char}' expected`);
    this.i++;
  }

  /** WKT separates with any white space: a literal written over several lines or with tabs is one geometry. */
  private skipSpace(): void {
    while (this.i < this.text.length && WHITE_SPACE.has(this.text[this.i]!)) this.i++;
  }

  private fail(at: number, token: string, message: string): never {
    throw new StaQueryError(this.where, this.offset + at, token, message);
  }
}
