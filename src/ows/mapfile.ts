import type { CollectionDef, GeometryType } from './types.js';

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
  title: string;
  /** The route's public base; `ows_onlineresource` is `{publicBase}?`. */
  publicBase: string;
  /** The dataset's storage schema, holding one table per collection. */
  schema: string;
  collections: CollectionDef[];
  /** Style names per collection (layer), the first being the layer's default. */
  stylesByLayer: ReadonlyMap<string, readonly string[]>;
  /** File names of each layer's GetFeatureInfo HTML template, beside the mapfile. */
  templates: { header: string; footer: string; layer: (collection: string) => string };
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

/** A mapfile string literal: quotes and backslashes escaped, line breaks (which end a token) flattened. */
export const quote = (text: string) => `"${text.replace(/[\r\n]+/g, ' ').replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export function renderMapfile(input: MapfileInput): string {
  const onlineResource = `${input.publicBase}?`;
  // SLD (by URL and SLD_BODY) is what draws the dataset's styles, and only the gateway sends one:
  // a map without styles has it switched off altogether.
  const sldEnabled = [...input.stylesByLayer.values()].some((names) => names.length > 0) ? 'true' : 'false';
  return `MAP
  NAME ${quote(input.alias)}
  EXTENT -180 -90 180 90
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
  END
  WEB
    METADATA
      "ows_title" ${quote(input.title)}
      "ows_onlineresource" ${quote(onlineResource)}
      "ows_srs" ${quote(OFFERED_SRS.join(' '))}
      "wms_enable_request" "${WMS_REQUESTS}"
      "wfs_enable_request" "${WFS_REQUESTS}"
      "wms_sld_enabled" "${sldEnabled}"
      "ms_enable_modes" "!*"
      "wfs_namespace_prefix" ${quote(input.slug)}
      "wfs_namespace_uri" ${quote(input.publicBase)}
      "wfs_getfeature_formatlist" "geojson"
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
  // World extent for WGS 84 spares MapServer a full-table ST_Extent on every capabilities request.
  const extent = collection.srid === 4326 ? '\n      "ows_extent" "-180 -90 180 90"' : '';
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
      "ows_title" ${quote(collection.title ?? collection.name)}${extent}
      "gml_include_items" "all"
      "gml_featureid" "fid"
      "gml_types" "auto"
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
