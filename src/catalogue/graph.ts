import N3 from 'n3';
import type { NamedNode, Quad, Quad_Object, Quad_Subject } from '@rdfjs/types';
import { term } from './namespaces.js';

const { namedNode, literal, quad } = N3.DataFactory;

/**
 * Characters no XML 1.0 document can carry (C0 controls but tab and line breaks, lone surrogates,
 * U+FFFE/U+FFFF): cut from every literal, so that the three serializations carry the same graph and
 * RDF/XML stays well-formed whatever a description holds.
 */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A graph under construction: triples in the order they were added, each once, and every node an
 * object points at typed once with the class validators expect (they infer nothing).
 */
export class Graph {
  private readonly quads: Quad[] = [];
  private readonly seen = new Set<string>();

  add(subject: Quad_Subject, predicate: NamedNode, object: Quad_Object): void {
    const key = `${subject.termType}:${subject.value} ${predicate.value} ${object.termType}:${object.value}:${object.termType === 'Literal' ? `${object.datatype.value}@${object.language}` : ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.quads.push(quad(subject, predicate, object));
  }

  /** `subject a type`. */
  type(subject: Quad_Subject, type: NamedNode): void {
    this.add(subject, term('rdf', 'type'), type);
  }

  /** A plain string literal, cleared of what XML cannot carry. */
  text(subject: Quad_Subject, predicate: NamedNode, value: string): void {
    this.add(subject, predicate, literal(value.replace(NOT_XML, '')));
  }

  /** A typed literal (`xsd:dateTime`, `gsp:wktLiteral`, …). */
  typed(subject: Quad_Subject, predicate: NamedNode, value: string, datatype: NamedNode): void {
    this.add(subject, predicate, literal(value, datatype));
  }

  /** An instant as `xsd:dateTime` in UTC with its zone (`2024-05-01T10:00:00.000Z`): never a local time. */
  dateTime(subject: Quad_Subject, predicate: NamedNode, value: Date): void {
    this.typed(subject, predicate, value.toISOString(), term('xsd', 'dateTime'));
  }

  /** An IRI object typed with `type`: `subject predicate <iri>. <iri> a type.` Answers the IRI's node. */
  link(subject: Quad_Subject, predicate: NamedNode, iri: string, type?: NamedNode): NamedNode {
    const node = namedNode(iri);
    this.add(subject, predicate, node);
    if (type) this.type(node, type);
    return node;
  }

  /** Adds every triple of `other` (a record built apart, so that a failure leaves nothing half-written here). */
  merge(other: Graph): void {
    for (const { subject, predicate, object } of other.quads) this.add(subject, predicate as NamedNode, object);
  }

  toQuads(): Quad[] {
    return [...this.quads];
  }
}
