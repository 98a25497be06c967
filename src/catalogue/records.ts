import N3 from 'n3';
import type { NamedNode } from '@rdfjs/types';
import { Graph } from './graph.js';
import { HVD_REGULATION, IANA_MEDIA_TYPE, term } from './namespaces.js';
import { VOCABULARIES, type Vocabulary } from './vocabularies.js';
import type { CatalogueMetadata } from './metadata.js';
import { catalogueIri, datasetIri } from './paths.js';

const { namedNode } = N3.DataFactory;

/**
 * The DCAT-AP 3 records of the catalogue, as RDF triples: the catalogue itself, and per released
 * open dataset its `dcat:Dataset`, a `dcat:DataService` per standard its named APIs speak and the
 * distributions that reach its data. Every object is typed with the class the SEMIC shapes expect,
 * every date-time carries its zone, every IRI is absolute.
 */

/** What the catalogue says of itself (settings). */
export interface CatalogueDescription {
  /** DATA_API_URL: the catalogue is `{dataApiUrl}/v1/catalogue`, a dataset `{dataApiUrl}/v1/datasets/{id}`. */
  dataApiUrl: string;
  title: string;
  description: string;
  publisher: { name: string; uri: string | null };
  contactEmail: string;
  /** An EU language code (ENG). */
  language: string;
  homepage: string;
  /** An EU licence code: a dataset's licence when it names none. */
  defaultLicense: string;
  /** The last change of any record (`dct:modified`), null before the first release. */
  modified: Date | null;
}

/** A named API of a released dataset. */
/** `upstream`: an upstream server answers it (upstream mode), so the platform holds none of its data. */
export interface RecordApi { slug: string; standard: 'OWS' | 'STA'; name: string; description: string | null; upstream?: boolean }

/** A bulk download of a named API. */
export interface RecordDownload { url: string; title: string; mediaType: string; format: string }

/** What the data holds, across the dataset's named APIs: null members where it says nothing. */
export interface DataExtent {
  /** WGS 84 longitude/latitude: [minx, miny, maxx, maxy]. */
  bbox: readonly [number, number, number, number] | null;
  start: Date | null;
  end: Date | null;
}

export interface DatasetRecord {
  id: string;
  title: string;
  description: string;
  metadata: CatalogueMetadata;
  /** First release. */
  issued: Date | null;
  /** Last metadata change or release. */
  modified: Date;
  apis: readonly RecordApi[];
  downloads: readonly RecordDownload[];
  extent: DataExtent;
}

/** How a standard's endpoint is described: one DataService (and its access distribution) each. */
interface ServiceKind {
  fragment: string;
  title: string;
  conformsTo: string;
  endpointDescription: (base: string) => string;
  /** Its documentation for people (`foaf:page`). */
  documentation: (base: string) => string;
  /** Its format in the EU file-type table. */
  format: string;
}

const SERVICES: Record<RecordApi['standard'], readonly ServiceKind[]> = {
  STA: [{
    fragment: 'sta', title: 'SensorThings API', conformsTo: 'http://www.opengis.net/doc/is/sensorthings/1.1',
    endpointDescription: (base) => base, documentation: () => 'https://www.ogc.org/standard/sensorthings/', format: 'JSON',
  }],
  OWS: [
    {
      fragment: 'wfs', title: 'Web Feature Service', conformsTo: 'http://www.opengis.net/def/serviceType/ogc/wfs',
      endpointDescription: (base) => `${base}?SERVICE=WFS&REQUEST=GetCapabilities`, documentation: () => 'https://www.ogc.org/standard/wfs/', format: 'WFS_SRVC',
    },
    {
      fragment: 'wms', title: 'Web Map Service', conformsTo: 'http://www.opengis.net/def/serviceType/ogc/wms',
      endpointDescription: (base) => `${base}?SERVICE=WMS&REQUEST=GetCapabilities`, documentation: () => 'https://www.ogc.org/standard/wms/', format: 'WMS_SRVC',
    },
    {
      fragment: 'ogcapi-features', title: 'OGC API – Features', conformsTo: 'http://www.opengis.net/spec/ogcapi-features-1/1.0',
      endpointDescription: (base) => `${base}/api`, documentation: (base) => `${base}/api?f=html`, format: 'GEOJSON',
    },
  ],
};


/** A concept of an EU table: linked, typed with `type` (and `skos:Concept`), labelled. */
function concept(graph: Graph, subject: NamedNode, predicate: NamedNode, table: Vocabulary, code: string, type?: NamedNode): void {
  const { uri, label } = table.concept(code);
  const node = graph.link(subject, predicate, uri, type ?? term('skos', 'Concept'));
  if (type) graph.type(node, term('skos', 'Concept'));
  graph.text(node, term('skos', 'prefLabel'), label);
}

/** A `vcard:Kind` with its e-mail address. */
function contactPoint(graph: Graph, subject: NamedNode, iri: string, email: string): void {
  const contact = graph.link(subject, term('dcat', 'contactPoint'), iri, term('vcard', 'Kind'));
  graph.link(contact, term('vcard', 'hasEmail'), `mailto:${email}`, term('rdfs', 'Resource'));
}

function publisher(graph: Graph, subject: NamedNode, catalogue: CatalogueDescription): void {
  const agent = graph.link(subject, term('dct', 'publisher'), catalogue.publisher.uri ?? `${catalogueIri(catalogue.dataApiUrl)}#publisher`, term('foaf', 'Agent'));
  graph.text(agent, term('foaf', 'name'), catalogue.publisher.name);
}

/** The catalogue's own triples: the same on every page. */
export function describeCatalogue(graph: Graph, catalogue: CatalogueDescription): NamedNode {
  const node = namedNode(catalogueIri(catalogue.dataApiUrl));
  graph.type(node, term('dcat', 'Catalog'));
  graph.text(node, term('dct', 'title'), catalogue.title);
  graph.text(node, term('dct', 'description'), catalogue.description);
  publisher(graph, node, catalogue);
  contactPoint(graph, node, `${node.value}#contact`, catalogue.contactEmail);
  graph.link(node, term('foaf', 'homepage'), catalogue.homepage, term('foaf', 'Document'));
  concept(graph, node, term('dct', 'language'), VOCABULARIES.language, catalogue.language, term('dct', 'LinguisticSystem'));
  const themes = graph.link(node, term('dcat', 'themeTaxonomy'), VOCABULARIES.dataTheme.scheme, term('skos', 'ConceptScheme'));
  graph.text(themes, term('dct', 'title'), 'Data theme');
  if (catalogue.modified) graph.dateTime(node, term('dct', 'modified'), catalogue.modified);
  return node;
}

/**
 * One dataset's record: its `dcat:Dataset`, its DataServices and its Distributions. `catalogueNode`
 * (when the record is part of a catalogue page) lists the dataset and its services.
 */
export function describeDataset(graph: Graph, catalogue: CatalogueDescription, record: DatasetRecord, catalogueNode?: NamedNode): void {
  const { metadata } = record;
  const node = namedNode(datasetIri(catalogue.dataApiUrl, record.id));
  const hvd = metadata.hvdCategories.length > 0;
  const licence = metadata.license ?? catalogue.defaultLicense;
  const contactEmail = metadata.contactEmail ?? catalogue.contactEmail;
  const contactIri = metadata.contactEmail ? `${node.value}#contact` : `${catalogueIri(catalogue.dataApiUrl)}#contact`;
  /** What a High-Value Dataset's dataset, services and distributions all carry. */
  const hvdProperties = (subject: NamedNode) => {
    if (!hvd) return;
    graph.link(subject, term('dcatap', 'applicableLegislation'), HVD_REGULATION, term('eli', 'LegalResource'));
    for (const code of metadata.hvdCategories) concept(graph, subject, term('dcatap', 'hvdCategory'), VOCABULARIES.hvdCategory, code);
  };
  const licensed = (subject: NamedNode) => concept(graph, subject, term('dct', 'license'), VOCABULARIES.licence, licence, term('dct', 'LicenseDocument'));

  if (catalogueNode) graph.add(catalogueNode, term('dcat', 'dataset'), node);
  graph.type(node, term('dcat', 'Dataset'));
  graph.text(node, term('dct', 'title'), record.title);
  graph.text(node, term('dct', 'description'), record.description);
  graph.text(node, term('dct', 'identifier'), record.id);
  if (record.issued) graph.dateTime(node, term('dct', 'issued'), record.issued);
  graph.dateTime(node, term('dct', 'modified'), record.modified);
  for (const keyword of metadata.keywords) graph.text(node, term('dcat', 'keyword'), keyword);
  for (const code of metadata.themes) concept(graph, node, term('dcat', 'theme'), VOCABULARIES.dataTheme, code);
  publisher(graph, node, catalogue);
  contactPoint(graph, node, contactIri, contactEmail);
  if (metadata.accrualPeriodicity) concept(graph, node, term('dct', 'accrualPeriodicity'), VOCABULARIES.frequency, metadata.accrualPeriodicity, term('dct', 'Frequency'));
  if (metadata.landingPage) graph.link(node, term('dcat', 'landingPage'), metadata.landingPage, term('foaf', 'Document'));
  hvdProperties(node);
  describeExtent(graph, node, record.extent);

  for (const api of record.apis) {
    const base = `${node.value}/${api.slug}`;
    for (const kind of SERVICES[api.standard]) {
      const service = graph.link(node, term('dcat', 'distribution'), `${base}#${kind.fragment}-distribution`, term('dcat', 'Distribution'));
      const dataService = namedNode(`${base}#${kind.fragment}`);
      if (catalogueNode) graph.add(catalogueNode, term('dcat', 'service'), dataService);
      graph.type(dataService, term('dcat', 'DataService'));
      graph.text(dataService, term('dct', 'title'), `${api.name}: ${kind.title}`);
      if (api.description) graph.text(dataService, term('dct', 'description'), api.description);
      graph.link(dataService, term('dcat', 'endpointURL'), base, term('rdfs', 'Resource'));
      graph.link(dataService, term('dcat', 'endpointDescription'), kind.endpointDescription(base), term('rdfs', 'Resource'));
      graph.link(dataService, term('dct', 'conformsTo'), kind.conformsTo, term('dct', 'Standard'));
      graph.add(dataService, term('dcat', 'servesDataset'), node);
      licensed(dataService);
      contactPoint(graph, dataService, contactIri, contactEmail);
      graph.link(dataService, term('foaf', 'page'), kind.documentation(base), term('foaf', 'Document'));
      hvdProperties(dataService);

      graph.text(service, term('dct', 'title'), `${api.name}: ${kind.title}`);
      graph.link(service, term('dcat', 'accessURL'), base, term('rdfs', 'Resource'));
      graph.add(service, term('dcat', 'accessService'), dataService);
      concept(graph, service, term('dct', 'format'), VOCABULARIES.fileType, kind.format, term('dct', 'MediaTypeOrExtent'));
      licensed(service);
      hvdProperties(service);
    }
  }
  for (const download of record.downloads) {
    const distribution = graph.link(node, term('dcat', 'distribution'), `${download.url}#distribution`, term('dcat', 'Distribution'));
    graph.text(distribution, term('dct', 'title'), download.title);
    graph.link(distribution, term('dcat', 'accessURL'), download.url, term('rdfs', 'Resource'));
    graph.link(distribution, term('dcat', 'downloadURL'), download.url, term('rdfs', 'Resource'));
    graph.link(distribution, term('dcat', 'mediaType'), IANA_MEDIA_TYPE(download.mediaType), term('dct', 'MediaType'));
    concept(graph, distribution, term('dct', 'format'), VOCABULARIES.fileType, download.format, term('dct', 'MediaTypeOrExtent'));
    licensed(distribution);
    hvdProperties(distribution);
  }
}

/** `dct:spatial` (a `dct:Location` with its WKT box) and `dct:temporal`, where the data says. */
function describeExtent(graph: Graph, dataset: NamedNode, extent: DataExtent): void {
  if (extent.bbox) {
    const [minx, miny, maxx, maxy] = extent.bbox.map((value) => Number(value.toFixed(7)));
    const location = graph.link(dataset, term('dct', 'spatial'), `${dataset.value}#spatial`, term('dct', 'Location'));
    const ring = [[minx, miny], [maxx, miny], [maxx, maxy], [minx, maxy], [minx, miny]].map(([x, y]) => `${x} ${y}`).join(', ');
    graph.typed(location, term('dcat', 'bbox'), `POLYGON((${ring}))`, term('gsp', 'wktLiteral'));
  }
  if (extent.start || extent.end) {
    const period = graph.link(dataset, term('dct', 'temporal'), `${dataset.value}#temporal`, term('dct', 'PeriodOfTime'));
    if (extent.start) graph.dateTime(period, term('dcat', 'startDate'), extent.start);
    if (extent.end) graph.dateTime(period, term('dcat', 'endDate'), extent.end);
  }
}

/** Hydra paging as ckanext-dcat writes it (both term generations), every link absolute. */
export interface Paging { pageUrl: (page: number) => string; page: number; pageSize: number; totalItems: number }

export function describePaging(graph: Graph, paging: Paging): void {
  const lastPage = Math.max(1, Math.ceil(paging.totalItems / paging.pageSize));
  const node = namedNode(paging.pageUrl(paging.page));
  graph.type(node, term('hydra', 'PagedCollection'));
  graph.typed(node, term('hydra', 'totalItems'), String(paging.totalItems), term('xsd', 'integer'));
  graph.typed(node, term('hydra', 'itemsPerPage'), String(paging.pageSize), term('xsd', 'integer'));
  const links: Array<[string, string, number | null]> = [
    ['firstPage', 'first', 1],
    ['lastPage', 'last', lastPage],
    ['nextPage', 'next', paging.page < lastPage ? paging.page + 1 : null],
    ['previousPage', 'previous', paging.page > 1 ? Math.min(paging.page - 1, lastPage) : null],
  ];
  // The older terms as ckanext-dcat writes them (literals), the current ones as IRIs, typed like every object.
  for (const [legacy, current, page] of links) {
    if (page === null) continue;
    graph.text(node, term('hydra', legacy), paging.pageUrl(page));
    graph.link(node, term('hydra', current), paging.pageUrl(page), term('rdfs', 'Resource'));
  }
}
