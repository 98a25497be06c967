/** Where the catalogue and its records are, and the formats they come in: plain values, no RDF library behind them. */

export type RdfFormat = 'turtle' | 'jsonld' | 'rdfxml';

export const MEDIA_TYPES: Record<RdfFormat, string> = {
  turtle: 'text/turtle', jsonld: 'application/ld+json', rdfxml: 'application/rdf+xml',
};
export const SUFFIXES: Record<RdfFormat, string> = { turtle: '.ttl', jsonld: '.jsonld', rdfxml: '.rdf' };

export const catalogueIri = (dataApiUrl: string) => `${dataApiUrl}/v1/catalogue`;
export const datasetIri = (dataApiUrl: string, id: string) => `${dataApiUrl}/v1/datasets/${id}`;
