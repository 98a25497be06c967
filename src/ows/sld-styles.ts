import { XMLBuilder, XMLParser } from 'fast-xml-parser';

/**
 * A dataset's SLD styles, cut into what MapServer's SLD support takes per request: every
 * `NamedLayer` of a style applies to the layer (collection) it names. A WMS request that draws
 * layers gets one `SLD_BODY` holding, for each of its layers, the NamedLayer of the style chosen by
 * `STYLES` (by the style's name) or else of the layer's first style; MapServer then draws with the
 * SLD's rules. Styles only change while a dataset is DRAFT, so they are read once per map.
 */
export interface StoredStyle { name: string; sldContent: string }

type XmlNode = Record<string, unknown> & { ':@'?: Record<string, string> };

interface LayerStyle { style: string; namedLayer: XmlNode }

export interface DatasetStyles {
  /** Style names per layer, the first being its default; layers without a style are absent. */
  readonly namesByLayer: ReadonlyMap<string, readonly string[]>;
  /**
   * The SLD body drawing `layers` with `styles` (WMS's comma lists, by position), and the STYLES
   * value to send with it; null when no requested layer has a style. A style name that is not one
   * of the layer's is left in STYLES, for MapServer to answer StyleNotDefined.
   */
  sldFor(layers: string[], styles: string[]): { sldBody: string; styles: string } | null;
}

// Entities stay unexpanded (no document can grow in the parser); attributes keep their namespaces.
const parser = new XMLParser({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', processEntities: false, ignoreDeclaration: true, ignorePiTags: true, trimValues: true });
const builder = new XMLBuilder({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', processEntities: false, suppressEmptyNode: true });

const localName = (tag: string) => tag.slice(tag.indexOf(':') + 1);
const tagOf = (node: XmlNode) => Object.keys(node).find((key) => key !== ':@') ?? '';
const childrenOf = (node: XmlNode) => (node[tagOf(node)] as XmlNode[] | undefined) ?? [];

function textOf(node: XmlNode): string {
  return childrenOf(node).map((child) => ('#text' in child ? String(child['#text']) : '')).join('').trim();
}

export function datasetStyles(stored: readonly StoredStyle[]): DatasetStyles {
  const byLayer = new Map<string, LayerStyle[]>();
  const rootAttributes: Record<string, string> = {};
  let rootTag = 'StyledLayerDescriptor';
  for (const style of [...stored].sort((a, b) => a.name.localeCompare(b.name))) {
    const root = parseRoot(style.sldContent);
    if (!root) continue;
    rootTag = tagOf(root);
    // The namespace declarations travel with the layers taken out of this document.
    for (const [name, value] of Object.entries(root[':@'] ?? {})) if (name.startsWith('xmlns') || name === 'version') rootAttributes[name] ??= value;
    for (const child of childrenOf(root)) {
      if (localName(tagOf(child)) !== 'NamedLayer') continue;
      const layer = childrenOf(child).find((node) => localName(tagOf(node)) === 'Name');
      const layerName = layer ? textOf(layer) : '';
      if (!layerName) continue;
      const list = byLayer.get(layerName) ?? [];
      if (!list.some((entry) => entry.style === style.name)) list.push({ style: style.name, namedLayer: child });
      byLayer.set(layerName, list);
    }
  }
  const namesByLayer = new Map([...byLayer].map(([layer, list]) => [layer, list.map((entry) => entry.style)]));
  return {
    namesByLayer,
    sldFor(layers, styles) {
      const chosen: XmlNode[] = [];
      const sentStyles = layers.map((layer, i) => {
        const asked = (styles[i] ?? '').trim();
        const options = byLayer.get(layer) ?? [];
        const match = asked === '' || asked.toLowerCase() === 'default' ? options[0] : options.find((entry) => entry.style === asked);
        if (!match) return asked;
        chosen.push(match.namedLayer);
        return '';
      });
      if (chosen.length === 0) return null;
      const document = [{ [rootTag]: chosen, ':@': { version: '1.0.0', ...rootAttributes } }];
      return { sldBody: builder.build(document) as string, styles: sentStyles.join(',') };
    },
  };
}

function parseRoot(content: string): XmlNode | undefined {
  try {
    const nodes = parser.parse(content) as XmlNode[];
    return nodes.find((node) => localName(tagOf(node)) === 'StyledLayerDescriptor');
  } catch {
    return undefined; // stored styles were checked when saved; one that no longer parses draws nothing
  }
}
