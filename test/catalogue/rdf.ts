import { readFile } from 'node:fs/promises';
import path from 'node:path';
import N3 from 'n3';
import jsonld from 'jsonld';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import SHACLValidator from 'rdf-validate-shacl';
import { isomorphic } from 'rdf-isomorphic';
import type { Quad } from '@rdfjs/types';
import { REPOSITORY } from '../helpers/repository.js';

/**
 * How the catalogue's tests read what it answers, with parsers other than the writers it uses
 * (N3.js reads Turtle, jsonld.js turns JSON-LD into N-Quads, rdfxml-streaming-parser reads RDF/XML),
 * and validate it with rdf-validate-shacl against the SEMIC shapes kept in ./shapes (SOURCE.md).
 */

export type Format = 'turtle' | 'jsonld' | 'rdfxml';

export async function parseRdf(body: string, format: Format, baseIRI = 'http://relative.invalid/'): Promise<Quad[]> {
  if (format === 'turtle') return new N3.Parser({ baseIRI }).parse(body);
  if (format === 'jsonld') {
    // Nothing is fetched: the document must carry its context inline.
    const refuse = async (url: string) => { throw new Error(`the JSON-LD made jsonld.js load ${url}`); };
    const nquads = await jsonld.toRDF(JSON.parse(body), { format: 'application/n-quads', documentLoader: refuse as never, base: baseIRI } as never) as unknown as string;
    return new N3.Parser({ format: 'N-Quads' }).parse(nquads);
  }
  return new Promise((resolve, reject) => {
    const quads: Quad[] = [];
    const parser = new RdfXmlParser({ baseIRI });
    parser.on('data', (quad: Quad) => quads.push(quad));
    parser.on('error', reject);
    parser.on('end', () => resolve(quads));
    parser.write(body);
    parser.end();
  });
}

const shapesOf = async (...files: string[]) => {
  const quads: Quad[] = [];
  for (const file of files) quads.push(...new N3.Parser().parse(await readFile(path.join(REPOSITORY, 'test', 'catalogue', 'shapes', file), 'utf8')));
  return quads;
};

let dcatAp: Promise<SHACLValidator> | undefined;
let hvd: Promise<SHACLValidator> | undefined;

export interface Violation { focusNode: string; path: string | undefined; message: string; severity: string }

async function violationsOf(validator: SHACLValidator, quads: readonly Quad[]): Promise<Violation[]> {
  const report = await validator.validate(new N3.Store([...quads]) as never);
  return report.results.map((result) => ({
    focusNode: result.focusNode?.value ?? '', path: result.path?.value, message: result.message.map((m) => m.value).join(' '), severity: result.severity?.value.split('#')[1] ?? '',
  }));
}

/** The violations of the DCAT-AP 3.0.1 shapes (with their ranges) in the graph; none is what the catalogue must answer. */
export async function dcatApViolations(quads: readonly Quad[]): Promise<Violation[]> {
  dcatAp ??= shapesOf('dcat-ap-SHACL.ttl', 'ranges.ttl').then((shapes) => new SHACLValidator(new N3.Store(shapes) as never));
  return (await violationsOf(await dcatAp, quads)).filter((violation) => violation.severity === 'Violation');
}

/** The violations of the DCAT-AP HVD 3.0.0 shapes: a graph of High-Value Datasets only. */
export async function hvdViolations(quads: readonly Quad[]): Promise<Violation[]> {
  hvd ??= shapesOf('hvd-SHACL.ttl').then((shapes) => new SHACLValidator(new N3.Store(shapes) as never));
  return (await violationsOf(await hvd, quads)).filter((violation) => violation.severity === 'Violation');
}

export const sameGraph = (a: readonly Quad[], b: readonly Quad[]) => isomorphic([...a], [...b]);

export const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
export const DCAT = 'http://www.w3.org/ns/dcat#';
export const DCT = 'http://purl.org/dc/terms/';
export const HYDRA = 'http://www.w3.org/ns/hydra/core#';

/** The objects of `subject predicate ?`. */
export const objectsOf = (quads: readonly Quad[], subject: string | null, predicate: string) =>
  quads.filter((quad) => (subject === null || quad.subject.value === subject) && quad.predicate.value === predicate).map((quad) => quad.object);

/** The subjects of `? rdf:type type`. */
export const ofType = (quads: readonly Quad[], type: string) =>
  quads.filter((quad) => quad.predicate.value === `${RDF}type` && quad.object.value === type).map((quad) => quad.subject.value);
