/** graphy's RDF/XML scriber ships no types: the part of it serialize.ts uses. */
declare module '@graphy/content.xml.scribe' {
  import type { Duplex } from 'node:stream';
  function xmlScribe(config?: { prefixes?: Record<string, string> }): Duplex;
  export default xmlScribe;
}
