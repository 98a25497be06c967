import { logicalOperands, type Expr, type Literal, type QueryOptions } from './query/ast.js';

/**
 * Query options written back as text, for the `@iot.nextLink` of an expanded collection: the
 * options of an expansion exist only as parsed syntax by then, and the link must carry them all.
 */

const quote = (text: string) => `'${text.replace(/'/g, "''")}'`;

function wkt(geometry: { type: string; coordinates: unknown }): string {
  const point = (c: unknown) => (c as number[]).join(' ');
  const line = (c: unknown) => `(${(c as unknown[]).map(point).join(', ')})`;
  const polygon = (c: unknown) => `(${(c as unknown[]).map(line).join(', ')})`;
  switch (geometry.type) {
    case 'Point': return `POINT (${point(geometry.coordinates)})`;
    case 'LineString': return `LINESTRING ${line(geometry.coordinates)}`;
    case 'Polygon': return `POLYGON ${polygon(geometry.coordinates)}`;
    case 'MultiPoint': return `MULTIPOINT ${line(geometry.coordinates)}`;
    case 'MultiLineString': return `MULTILINESTRING (${(geometry.coordinates as unknown[]).map(line).join(', ')})`;
    case 'MultiPolygon': return `MULTIPOLYGON (${(geometry.coordinates as unknown[]).map(polygon).join(', ')})`;
    default: return `${geometry.type.toUpperCase()} EMPTY`;
  }
}

function literal(node: Literal): string {
  switch (node.type) {
    case 'string': return quote(node.value);
    case 'number': return String(node.value);
    case 'boolean': return String(node.value);
    case 'null': return 'null';
    case 'datetime': return node.value;
    case 'duration': return `duration${quote(node.value)}`;
    case 'interval': return `${node.value.start ?? node.value.duration}/${node.value.end ?? node.value.duration}`;
    case 'geometry': return `geography${quote(wkt(node.value))}`;
  }
}

export function exprText(expr: Expr): string {
  switch (expr.kind) {
    case 'literal': return literal(expr);
    case 'property': return expr.path.join('/');
    case 'binary': return `(${operandsOf(expr).map(exprText).join(` ${expr.op} `)})`;
    case 'not': return `not (${exprText(expr.operand)})`;
    case 'negate': return `-(${exprText(expr.operand)})`;
    case 'call': return `${expr.name}(${expr.args.map(exprText).join(',')})`;
  }
}

/** `a and b and c` as its three operands (a chain of one logical operator may be thousands long); any other operator's two. */
function operandsOf(expr: Expr & { kind: 'binary' }): Expr[] {
  return expr.op === 'and' || expr.op === 'or' ? logicalOperands(expr) : [expr.left, expr.right];
}

/** The options as `name=value` pairs (values not yet percent-encoded). */
export function optionPairs(options: QueryOptions): [string, string][] {
  const pairs: [string, string][] = [];
  if (options.top !== undefined) pairs.push(['$top', String(options.top)]);
  if (options.skip !== undefined) pairs.push(['$skip', String(options.skip)]);
  if (options.count !== undefined) pairs.push(['$count', String(options.count)]);
  if (options.filter) pairs.push(['$filter', exprText(options.filter)]);
  if (options.orderBy?.length) pairs.push(['$orderby', options.orderBy.map((o) => `${exprText(o.expr)} ${o.direction}`).join(',')]);
  if (options.select) pairs.push(['$select', options.select.join(',')]);
  if (options.expand?.length) {
    const items = options.expand.map((item) => {
      const inner = optionPairs(item.options);
      return inner.length ? `${item.path.join('/')}(${inner.map(([k, v]) => `${k}=${v}`).join(';')})` : item.path.join('/');
    });
    pairs.push(['$expand', items.join(',')]);
  }
  if (options.resultFormat) pairs.push(['$resultFormat', options.resultFormat]);
  return pairs;
}

export const optionsQuery = (options: QueryOptions) =>
  optionPairs(options).map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
