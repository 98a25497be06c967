import type { LayerExtent } from './collections.repo.js';
import { unionOfBoxes } from '../util/boxes.js';
import type { AttributeType, CollectionDef, GeometryType } from './types.js';

/**
 * The MapServer mapfile of one OWS named API: a layer per feature collection over its PostGIS
 * table, a class per style that names the layer (so that capabilities list the styles and
 * `STYLES=<name>` is a known class group; the style's SLD itself is applied per request, see
 * sld-styles.ts), and the OWS metadata that puts every advertised URL on the public route.
 *
 * The PostGIS connection names no host, user or password: the MapServer workers get those as
 * libpq environment variables, so no mapfile, log line or error text carries them.
 */
export interface MapfileInput {
  /** The map's alias in the MapServer config file (`MAPS`). */
  alias: string;
  /** The named API's slug: the WFS namespace prefix (`{slug}:{collection}`). */
  slug: string;
  /** What the capabilities say of the service and the root layer: the dataset's name, description and keywords. */
  service: { title: string; abstract: string | null; keywords: readonly string[] };
  /** The operator's contact (settings), named by every capabilities document. */
  contact: { organization: string | null; email: string | null };
  /** The route's public base; `ows_onlineresource` is `{publicBase}?`. */
  publicBase: string;
  /** The dataset's storage schema, holding one table per collection. */
  schema: string;
  collections: CollectionDef[];
  /** Each collection's advertised extent (null while empty); a collection missing here has none known. */
  extents: ReadonlyMap<string, LayerExtent | null>;
  /** Style names per collection (layer), the first being the layer's default. */
  stylesByLayer: ReadonlyMap<string, readonly string[]>;
  /** File names of each layer's GetFeatureInfo HTML template, beside the mapfile. */
  templates: { header: string; footer: string; layer: (collection: string) => string };
  /**
   * The map GeoJSON answers are drawn from: boolean attributes typed as text. MapServer 8.0 hands
   * GDAL 3.6 each value as text and GDAL reads `true` as 0 in a boolean field, so that GeoJSON
   * would say false for every feature; as text, GDAL writes `"true"`/`"false"`, which the gateway
   * turns into JSON booleans (json-answers.ts). The other map types them `xsd:boolean`.
   */
  booleansAsText?: boolean;
  /** The largest WIDTH and HEIGHT MapServer draws (the gateway refuses larger ones before). */
  maxImageSize: number;
}

/**
 * The operations MapServer serves, per service (every other service, WCS, SOS, OGC API, stays off).
 * The gateway allows no more (operations.ts); this holds even if it did.
 */
const WMS_REQUESTS = 'GetCapabilities GetMap GetFeatureInfo GetLegendGraphic GetStyles DescribeLayer';
const WFS_REQUESTS = 'GetCapabilities DescribeFeatureType GetFeature GetPropertyValue ListStoredQueries DescribeStoredQueries';

/** The projections GetMap and GetFeature are offered in besides each layer's own. */
export const OFFERED_SRS = ['EPSG:4326', 'EPSG:3857', 'EPSG:4258', 'EPSG:3035', 'EPSG:25832', 'EPSG:25833', 'EPSG:31467'];

const LAYER_TYPES: Record<GeometryType, string> = {
  Point: 'POINT', MultiPoint: 'POINT', LineString: 'LINE', MultiLineString: 'LINE', Polygon: 'POLYGON', MultiPolygon: 'POLYGON',
};

/**
 * What MapServer declares for each attribute type (DescribeFeatureType, and how GetFeature writes
 * the values): xsd:string, xsd:long, xsd:double, xsd:boolean, xsd:dateTime.
 */
const GML_TYPES: Record<AttributeType, string> = {
  string: 'Character', integer: 'Long', number: 'Real', boolean: 'Boolean', 'date-time': 'DateTime',
};

/** The geometry property's GML type (`gml:PointPropertyType`, …) as MapServer names it. */
const GML_GEOMETRY_TYPES: Record<GeometryType, string> = {
  Point: 'point', MultiPoint: 'multipoint', LineString: 'line', MultiLineString: 'multiline', Polygon: 'polygon', MultiPolygon: 'multipolygon',
};

type Box = readonly [number, number, number, number];
const WORLD: Box = [-180, -90, 180, 90];

/** MapServer splits a keyword list at commas: a keyword keeps none. */
const keywordList = (keywords: readonly string[]) => [...new Set(keywords.map((keyword) => keyword.replaceAll(',', ' ').trim()).filter(Boolean))].join(',');

/**
 * The WMS root layer's extent (WGS 84): the union of its layers' advertised extents (each already
 * grown, see advertised-extent.ts); the world while no layer has any.
 */
function mapExtent(input: MapfileInput): Box {
  const boxes = [...input.extents.values()].filter((extent): extent is LayerExtent => extent !== null).map((extent) => extent.wgs84);
  return unionOfBoxes(boxes) ?? WORLD;
}

/** A mapfile string literal: quotes and backslashes escaped, line breaks (which end a token) flattened. */
export const quote = (text: string) => `"${text.replace(/[\r\n]+/g, ' ').replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export function renderMapfile(input: MapfileInput): string {
  const onlineResource = `${input.publicBase}?`;
  // SLD (by URL and SLD_BODY) is what draws the dataset's styles, and only the gateway sends one:
  // a map without styles has it switched off altogether.
  const sldEnabled = [...input.stylesByLayer.values()].some((names) => names.length > 0) ? 'true' : 'false';
  const { service, contact } = input;
  const contactLines = [
    contact.organization ? `"ows_contactorganization" ${quote(contact.organization)}` : null,
    contact.email ? `"ows_contactelectronicmailaddress" ${quote(contact.email)}` : null,
  ].filter((line) => line !== null).map((line) => `\n      ${line}`).join('');
  return `MAP
  NAME ${quote(input.alias)}
  EXTENT ${WORLD.join(' ')}
  UNITS DD
  SIZE 256 256
  MAXSIZE ${Math.trunc(input.maxImageSize)}
  IMAGECOLOR 255 255 255
  IMAGETYPE png
  PROJECTION "init=epsg:4326" END
  SYMBOL NAME "circle" TYPE ELLIPSE FILLED TRUE POINTS 1 1 END END
  OUTPUTFORMAT
    NAME "geojson"
    DRIVER "OGR/GEOJSON"
    MIMETYPE "application/json"
    FORMATOPTION "STORAGE=stream"
    FORMATOPTION "FORM=SIMPLE"
    FORMATOPTION "LCO:ID_FIELD=fid"
    FORMATOPTION "LCO:ID_TYPE=Integer"
  END
  WEB
    METADATA
      "ows_title" ${quote(service.title)}
      "wms_extent" "${mapExtent(input).join(' ')}"
      "ows_abstract" ${quote(service.abstract ?? service.title)}
      "ows_keywordlist" ${quote(keywordList(service.keywords))}
      "wms_rootlayer_name" ${quote(input.collections.some((collection) => collection.name === input.slug) ? '' : input.slug)}
      "wms_rootlayer_title" ${quote(service.title)}
      "wms_rootlayer_abstract" ${quote(service.abstract ?? service.title)}
      "ows_fees" "none"
      "ows_accessconstraints" "none"${contactLines}
      "ows_onlineresource" ${quote(onlineResource)}
      "ows_service_onlineresource" ${quote(input.publicBase)}
      "ows_srs" ${quote(OFFERED_SRS.join(' '))}
      "wms_enable_request" "${WMS_REQUESTS}"
      "wfs_enable_request" "${WFS_REQUESTS}"
      "wms_sld_enabled" "${sldEnabled}"
      "ms_enable_modes" "!*"
      "wfs_namespace_prefix" ${quote(input.slug)}
      "wfs_namespace_uri" ${quote(input.publicBase)}
      "wfs_getfeature_formatlist" "geojson"
      "wfs_return_srs_as_urn" "true"
      "wms_getfeatureinfo_formatlist" "application/json,text/html,text/plain"
      "wms_feature_info_mime_type" "text/html"
    END
  END
${input.collections.length > 0 ? input.collections.map((collection) => renderLayer(input, collection)).join('') : PLACEHOLDER_LAYER}END
`;
}

/**
 * MapServer's WFS answers nothing, not even GetCapabilities, for a map without a WFS layer. A map
 * with no collection yet gets this stand-in (no collection name can start with `_`), enabled for
 * GetCapabilities only; the OWS server removes it from the document.
 */
export const PLACEHOLDER_NAME = '__none';
const PLACEHOLDER_LAYER = `  LAYER
    NAME "${PLACEHOLDER_NAME}"
    TYPE POINT
    STATUS OFF
    METADATA
      "wms_enable_request" "!*"
      "wfs_enable_request" "GetCapabilities"
    END
  END
`;

/** A WFS capabilities document without the placeholder's feature type. */
export const withoutPlaceholder = (document: string) =>
  document.replace(new RegExp(`<FeatureType\\b(?:(?!</FeatureType>)[\\s\\S])*?:${PLACEHOLDER_NAME}<[\\s\\S]*?</FeatureType>\\s*`), '');

function renderLayer(input: MapfileInput, collection: CollectionDef): string {
  const styles = input.stylesByLayer.get(collection.name) ?? [];
  const table = `"${input.schema}"."${collection.name}"`;
  // The data's extent is what WMS capabilities advertise (WFS capabilities get it from the gateway,
  // xml-answers.ts). It may lag the data (OwsServer.mapFor refreshes it at most every
  // OWS_EXTENT_REFRESH_MS), so queries never use it: MapServer 8.0 cuts a WFS GetFeature without
  // BBOX to the layer's WFS extent and a filtered one to the map's EXTENT, both the world here
  // (WGS 84; another SRID has no WFS extent, and MapServer asks PostGIS for the table's).
  const known = input.extents.get(collection.name);
  const wmsExtent = known ? known.native : collection.srid === 4326 ? WORLD : null;
  const extent = (wmsExtent ? `\n      "wms_extent" "${wmsExtent.join(' ')}"` : '') + (collection.srid === 4326 ? `\n      "wfs_extent" "${WORLD.join(' ')}"` : '');
  const gmlType = (type: AttributeType) => (type === 'boolean' && input.booleansAsText ? 'Character' : GML_TYPES[type]);
  const attributes = Object.entries(collection.properties).map(([name, type]) => `\n      "gml_${name}_type" "${gmlType(type)}"`).join('');
  return `  LAYER
    NAME ${quote(collection.name)}
    TYPE ${LAYER_TYPES[collection.geometryType]}
    STATUS ON
    CONNECTIONTYPE POSTGIS
    CONNECTION "application_name=mapserver"
    PROCESSING "CLOSE_CONNECTION=DEFER"
    DATA ${quote(`geom from ${table} using unique fid using srid=${collection.srid}`)}
    PROJECTION "init=epsg:${collection.srid}" END
    TEMPLATE ${quote(input.templates.layer(collection.name))}
    HEADER ${quote(input.templates.header)}
    FOOTER ${quote(input.templates.footer)}
    TOLERANCE 5
    TOLERANCEUNITS PIXELS
    METADATA
      "ows_title" ${quote(collection.title ?? collection.name)}
      "ows_abstract" ${quote(collection.title ?? collection.name)}
      "ows_keywordlist" ${quote(keywordList([collection.name, collection.geometryType]))}${extent}
      "gml_include_items" "all"
      "wfs_use_default_extent_for_getfeature" "false"
      "gml_featureid" "fid"
      "gml_fid_type" "Long"${attributes}
      "gml_geometries" "geom"
      "gml_geom_type" "${GML_GEOMETRY_TYPES[collection.geometryType]}"
      "wms_include_items" "all"
    END
${styles.length > 0 ? `    CLASSGROUP ${quote(styles[0]!)}\n${styles.map((style) => renderClass(collection.geometryType, style, style)).join('')}` : renderClass(collection.geometryType, collection.name, null)}  END
`;
}

/** A plain class: what a layer looks like without a style, and the stand-in of each style's SLD in the mapfile. */
function renderClass(geometryType: GeometryType, name: string, group: string | null): string {
  const type = LAYER_TYPES[geometryType];
  const style = type === 'POINT'
    ? 'SYMBOL "circle" SIZE 8 COLOR 51 102 204 OUTLINECOLOR 255 255 255'
    : type === 'LINE' ? 'COLOR 51 102 204 WIDTH 2' : 'COLOR 153 187 221 OUTLINECOLOR 51 102 204';
  return `    CLASS
      NAME ${quote(name)}${group === null ? '' : `\n      GROUP ${quote(group)}`}
      STYLE ${style} END
    END
`;
}

/** The GetFeatureInfo `text/html` template of a layer: one table per feature, a row per attribute. */
export function renderLayerTemplate(collection: CollectionDef): string {
  const rows = ['fid', ...Object.keys(collection.properties)]
    .map((name) => `<tr><th>${name}</th><td>[item name=${quote(name)} escape="html"]</td></tr>`).join('\n');
  return `<!-- MapServer Template -->\n<table class="feature"><caption>${collection.name}</caption>\n${rows}\n</table>\n`;
}

export const TEMPLATE_HEADER = '<!-- MapServer Template -->\n<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Feature info</title></head><body>\n';
export const TEMPLATE_FOOTER = '<!-- MapServer Template -->\n</body></html>\n';
