/** The open-data catalogue's public face: the data API serves it, the datasets module feeds it, runtime.ts builds it. */
export { CatalogueService, type CatalogueEntry, type CatalogueSource, type CatalogueDocument } from './catalogue.js';
export { ExtentCache } from './extent-cache.js';
export { readDatasetData } from './dataset-data.js';
export { MEDIA_TYPES, SUFFIXES, type RdfFormat } from './paths.js';
export { catalogueMetadataOf, catalogueMetadataProblems, mergeCatalogueMetadata, EMPTY_CATALOGUE_METADATA, type CatalogueMetadata, type CatalogueMetadataPatch } from './metadata.js';
