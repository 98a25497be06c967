/**
 * The OGC operations the gateway lets reach MapServer, and for each the parameters it passes: an
 * allowlist per service, version and request, names in lower case (they are matched without
 * regard to case, as MapServer matches them). Anything else a caller sends is dropped: `SLD`,
 * `SLD_BODY`, `MAP`, runtime substitutions (`map.*`, `map_*`), MapServer's own CGI parameters
 * (`mode`, `qlayer`, `mapext`, `imgext`, …) and `EXCEPTIONS` (MapServer's in-image and HTML
 * error formats would carry its messages past the gateway's exception reports).
 */
export type OwsService = 'WMS' | 'WFS';

export const SERVICE_VERSIONS: Record<OwsService, readonly string[]> = {
  WMS: ['1.0.0', '1.0.7', '1.1.0', '1.1.1', '1.3.0'],
  WFS: ['1.0.0', '1.1.0', '2.0.0'],
};

/** WMS drawing requests take the dataset's styles and an image size. */
export const DRAWING_REQUESTS = new Set(['getmap', 'getfeatureinfo', 'getlegendgraphic']);

const WMS_MAP = ['layers', 'styles', 'bbox', 'width', 'height', 'format', 'transparent', 'bgcolor', 'time', 'elevation', 'filter'];
const WFS_QUERY = [
  'typename', 'typenames', 'aliases', 'srsname', 'propertyname', 'filter', 'filter_language', 'bbox', 'resourceid', 'featureid',
  'sortby', 'count', 'maxfeatures', 'startindex', 'resulttype', 'outputformat', 'namespaces', 'namespace', 'storedquery_id',
  // The one parameter of WFS 2.0's built-in stored query GetFeatureById.
  'id',
];

/** Request (lower case) → its own parameters, besides SERVICE, VERSION and REQUEST. */
const OPERATIONS: Record<OwsService, Record<string, readonly string[]>> = {
  WMS: {
    getcapabilities: ['format', 'updatesequence'],
    getmap: WMS_MAP,
    getfeatureinfo: [...WMS_MAP, 'query_layers', 'info_format', 'feature_count', 'radius'],
    getlegendgraphic: ['layer', 'style', 'format', 'width', 'height', 'scale', 'rule', 'sld_version'],
    getstyles: ['layers', 'sld_version'],
    describelayer: ['layers', 'sld_version'],
  },
  WFS: {
    getcapabilities: ['acceptversions', 'sections', 'updatesequence', 'acceptformats'],
    describefeaturetype: ['typename', 'typenames', 'outputformat', 'namespaces', 'namespace'],
    getfeature: WFS_QUERY,
    getpropertyvalue: [...WFS_QUERY, 'valuereference'],
    liststoredqueries: [],
    describestoredqueries: ['storedquery_id'],
  },
};

/** WMS 1.3.0 names the map's CRS and a pixel I/J; the versions before it SRS and X/Y. */
function versionParams(service: OwsService, request: string, version: string | undefined): string[] {
  if (service !== 'WMS' || (request !== 'getmap' && request !== 'getfeatureinfo')) return [];
  const pixel = request === 'getfeatureinfo';
  const current = ['crs', ...(pixel ? ['i', 'j'] : [])];
  const older = ['srs', ...(pixel ? ['x', 'y'] : [])];
  if (version === undefined) return [...current, ...older];
  return version === '1.3.0' ? current : older;
}

/** The parameter names (lower case) an operation passes, or null when the gateway does not serve it. */
export function allowedParams(service: OwsService, request: string, version: string | undefined): ReadonlySet<string> | null {
  // Own properties only: a REQUEST of `constructor` must not find Object's.
  if (!Object.hasOwn(OPERATIONS[service], request)) return null;
  const own = OPERATIONS[service][request]!;
  return new Set(['service', 'version', 'request', ...(service === 'WMS' ? ['wmtver'] : []), ...own, ...versionParams(service, request, version)]);
}

/** The service of a request that names none: WMS 1.1's GetMap may omit it; an operation of one service only says which. */
export function serviceOfRequest(request: string): OwsService | null {
  const inWms = Object.hasOwn(OPERATIONS.WMS, request);
  const inWfs = Object.hasOwn(OPERATIONS.WFS, request);
  return inWms && !inWfs ? 'WMS' : inWfs && !inWms ? 'WFS' : null;
}

/** The operations an XML POST may carry (WFS only; a WMS GetMap in XML would bring its own SLD). */
export const XML_READS = new Set(['GetCapabilities', 'DescribeFeatureType', 'GetFeature', 'GetPropertyValue', 'ListStoredQueries', 'DescribeStoredQueries']);
export const XML_WRITES = new Set(['Transaction']);
