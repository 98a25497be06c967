import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * Why an SLD document is refused, or null: it must be well-formed XML (the problem is named with
 * its line and column) whose root element is a `StyledLayerDescriptor`, under any namespace
 * prefix. Deeper SLD schema checks are the map server's business when it loads the style.
 */
export function sldProblem(content: string): string | null {
  const result = XMLValidator.validate(content, { allowBooleanAttributes: true });
  if (result !== true) return `is not well-formed XML: ${result.err.msg} (line ${result.err.line}, column ${result.err.col})`;
  const roots = topLevelElementsOf(content);
  if (roots.length === 0) return 'is not an XML document: it has no root element';
  if (roots.length > 1) return `is not well-formed XML: it has ${roots.length} root elements (${roots.join(', ')}); a document has one`;
  const root = roots[0]!;
  const localName = root.includes(':') ? root.slice(root.indexOf(':') + 1) : root;
  if (localName !== 'StyledLayerDescriptor') return `root element is ${root}, not StyledLayerDescriptor`;
  return null;
}

// Entities are left unexpanded: a document cannot make the parser grow it.
const parser = new XMLParser({ preserveOrder: true, ignoreDeclaration: true, ignorePiTags: true, processEntities: false, ignoreAttributes: true });

function topLevelElementsOf(content: string): string[] {
  const nodes = parser.parse(content) as Record<string, unknown>[];
  return nodes.map((node) => Object.keys(node).find((key) => key !== ':@'))
    .filter((name): name is string => name !== undefined && name !== '#text' && !name.startsWith('?') && !name.startsWith('!'));
}
