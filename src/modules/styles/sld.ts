import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * Why an SLD document is refused, or null: it must be well-formed XML (the problem is named with
 * its line and column) whose root element is a `StyledLayerDescriptor`, under any namespace
 * prefix. Deeper SLD schema checks are the map server's business when it loads the style.
 */
export function sldProblem(content: string): string | null {
  // A document type declaration brings entities (external ones are fetched by some readers, nested
  // ones grow a document) and is never needed by an SLD: refused before any parser sees it.
  const declaration = declarationIn(content);
  if (declaration) return `must not contain a document type or entity declaration (${declaration}); an SLD needs none`;
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

/** The first `<!…` that is neither a comment nor a CDATA section (`<!DOCTYPE`, `<!ENTITY`, …), or null. */
function declarationIn(content: string): string | null {
  for (let at = content.indexOf('<!'); at >= 0; at = content.indexOf('<!', at + 2)) {
    if (content.startsWith('<!--', at)) {
      const end = content.indexOf('-->', at + 4);
      if (end < 0) return null; // unclosed: the well-formedness check names it
      at = end;
    } else if (content.startsWith('<![CDATA[', at)) {
      const end = content.indexOf(']]>', at + 9);
      if (end < 0) return null;
      at = end;
    } else {
      return content.slice(at, at + 12).replace(/\s.*$/s, '');
    }
  }
  return null;
}

function topLevelElementsOf(content: string): string[] {
  let nodes: Record<string, unknown>[];
  try {
    nodes = parser.parse(content) as Record<string, unknown>[];
  } catch {
    return []; // validated above; a document the parser still refuses has no root element to name
  }
  return nodes.map((node) => Object.keys(node).find((key) => key !== ':@'))
    .filter((name): name is string => name !== undefined && name !== '#text' && !name.startsWith('?') && !name.startsWith('!'));
}
