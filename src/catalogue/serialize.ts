import N3 from 'n3';
import jsonld from 'jsonld';
import xmlScribe from '@graphy/content.xml.scribe';
import type { Quad } from '@rdfjs/types';
import { PREFIXES } from './namespaces.js';
import type { RdfFormat } from './paths.js';

/**
 * The catalogue's three serializations, each written by an RDF library from the same triples (none
 * is built as a string here): Turtle by N3.js, JSON-LD by jsonld.js (compacted with its `@context`
 * inline, so that nothing is fetched to read it), RDF/XML by graphy's XML scriber.
 */


export async function serialize(quads: readonly Quad[], format: RdfFormat): Promise<string> {
  switch (format) {
    case 'turtle': return turtle(quads);
    case 'jsonld': return jsonLd(quads);
    case 'rdfxml': return rdfXml(quads);
  }
}

/** N3.js writes a subject's triples together only when they come together: grouped, in order of first appearance. */
function bySubject(quads: readonly Quad[]): Quad[] {
  const groups = new Map<string, Quad[]>();
  for (const quad of quads) {
    const key = `${quad.subject.termType}:${quad.subject.value}`;
    const group = groups.get(key);
    if (group) group.push(quad);
    else groups.set(key, [quad]);
  }
  return [...groups.values()].flat();
}

function turtle(quads: readonly Quad[]): Promise<string> {
  const writer = new N3.Writer({ prefixes: PREFIXES });
  writer.addQuads(bySubject(quads));
  return new Promise((resolve, reject) => writer.end((error, text) => (error ? reject(error) : resolve(text))));
}

/** jsonld.js never loads a document here: the context is inline, and any other load is refused. */
const refuseLoading = async (url: string): Promise<never> => {
  throw new Error(`the catalogue's JSON-LD loads no document (${url})`);
};

async function jsonLd(quads: readonly Quad[]): Promise<string> {
  // jsonld.js reads RDF/JS quads as its own dataset form (termType, value, datatype, language).
  const expanded = await jsonld.fromRDF(quads as unknown as Parameters<typeof jsonld.fromRDF>[0], { useNativeTypes: false, useRdfType: false });
  const compacted = await jsonld.compact(expanded, { ...PREFIXES }, { documentLoader: refuseLoading as never });
  return JSON.stringify(compacted);
}

function rdfXml(quads: readonly Quad[]): Promise<string> {
  const scribe = xmlScribe({ prefixes: PREFIXES });
  const chunks: string[] = [];
  return new Promise((resolve, reject) => {
    scribe.on('data', (chunk: string | Buffer) => chunks.push(chunk.toString()));
    scribe.on('error', reject);
    scribe.on('end', () => resolve(chunks.join('')));
    for (const quad of quads) scribe.write(quad);
    scribe.end();
  });
}
