/**
 * GeoJSON answers (WFS `OUTPUTFORMAT=application/json`, WMS GetFeatureInfo in `application/json`)
 * as a client gets them. They come from the map that types boolean attributes as text (mapfile.ts,
 * `booleansAsText`), so GDAL writes `"active": "true"`: each boolean attribute's value becomes a
 * JSON boolean (or null), as on the collection routes.
 *
 * Only a member written `, "name": "true"|"false"` or `{ "name": …` is touched: inside a JSON string a quote
 * is escaped, so that text is always a member. Attribute names that GeoJSON's own members also
 * use (`id`, `type`, …) are left as they are, not to touch a feature's `id`.
 */
const GEOJSON_MEMBERS = new Set(['id', 'type', 'name', 'bbox', 'crs', 'features', 'geometry', 'properties', 'coordinates', 'geometries']);

export function rewriteJsonFeatures(body: Buffer, booleans: readonly string[]): Buffer {
  const names = booleans.filter((name) => !GEOJSON_MEMBERS.has(name));
  if (names.length === 0) return body;
  // Attribute names are [a-z][a-z0-9_]* (collection-definition.ts): nothing to escape.
  const member = new RegExp(`([{,]\\s*"(?:${names.join('|')})"\\s*:\\s*)"(true|false|)"(?=\\s*[,}])`, 'g');
  // A null boolean comes as the empty text.
  return Buffer.from(body.toString('utf8').replace(member, (_match, head: string, value: string) => `${head}${value || 'null'}`), 'utf8');
}
