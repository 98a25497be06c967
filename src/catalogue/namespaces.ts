import N3 from 'n3';

/** The vocabularies the catalogue speaks, and the prefixes each serialization declares for them. */
export const PREFIXES = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  dcat: 'http://www.w3.org/ns/dcat#',
  dct: 'http://purl.org/dc/terms/',
  foaf: 'http://xmlns.com/foaf/0.1/',
  vcard: 'http://www.w3.org/2006/vcard/ns#',
  skos: 'http://www.w3.org/2004/02/skos/core#',
  hydra: 'http://www.w3.org/ns/hydra/core#',
  dcatap: 'http://data.europa.eu/r5r/',
  eli: 'http://data.europa.eu/eli/ontology#',
  gsp: 'http://www.opengis.net/ont/geosparql#',
} as const;

type Prefix = keyof typeof PREFIXES;

/** `term('dcat', 'Dataset')`: the named node of a term of one of the vocabularies above. */
export const term = (prefix: Prefix, local: string) => N3.DataFactory.namedNode(`${PREFIXES[prefix]}${local}`);

/** The EU's High-Value Datasets regulation, which `dcatap:applicableLegislation` names. */
export const HVD_REGULATION = 'http://data.europa.eu/eli/reg_impl/2023/138/oj';

/** IANA's media type registry, whose IRIs `dcat:mediaType` takes. */
export const IANA_MEDIA_TYPE = (mediaType: string) => `http://www.iana.org/assignments/media-types/${mediaType}`;
