/**
 * GeoJSON answers (WFS `OUTPUTFORMAT=application/json`, WMS GetFeatureInfo in `application/json`) as a client gets them. MapServer 8.0 hands GDAL 3.6 a
 * boolean attribute as an integer field (mapfile.ts reads it as `1`/`0`), so GDAL writes
 * `"active": 1`: each boolean attribute's value becomes `true`/`false`, as on the collection routes.
 *
 * Only a member written `, "name": 0|1` or `{ "name": 0|1` is touched: inside a JSON string a quote
 * is escaped, so that text is always a member. Attribute names that GeoJSON's own members also
 * use (`id`, `type`, …) are left as they are, not to touch a feature's `id`.
 */
const GEOJSON_MEMBERS = new Set(['id', 'type', 'name', 'bbox', 'crs', 'features', 'geometry', 'properties', 'coordinates', 'geometries']);

export function rewriteJsonFeatures(body: Buffer, booleans: readonly string[]): Buffer {
  const names = booleans.filter((name) => !GEOJSON_MEMBERS.has(name));
  if (names.length === 0) return body;
  // Attribute names are [a-z][a-z0-9_]* (collection-definition.ts): nothing to escape.
  const member = new RegExp(`([{,]\\s*"(?:${names.join('|')})"\\s*:\\s*)([01])(?=\\s*[,}])`, 'g');
  const text = body.toString('utf8');
  return Buffer.from(text.replace(member, (_match, head: string, digit: string) => `${head}${digit === '1' ? 'true' : 'false'}`), 'utf8');
}
