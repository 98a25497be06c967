/**
 * What renders the catalogue's documents: the graph, the DCAT-AP records and the three writers.
 * catalogue.ts imports this module with the first catalogue request, so that the RDF libraries
 * (N3.js, jsonld.js, graphy: some 200 ms of loading) do not slow the start of every process.
 */
export { Graph } from './graph.js';
export { describeCatalogue, describeDataset, describePaging } from './records.js';
export { serialize } from './serialize.js';
