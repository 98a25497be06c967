/**
 * Plain HTML pages of OGC API – Features for people with a browser: each JSON document as a page
 * with its links, and features as a table. Every value is escaped; no script, no style from elsewhere.
 */

const escape = (value: unknown) => String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface Link { href: string; rel: string; title?: string }

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}</style>
</head><body>
<h1>${escape(title)}</h1>
${body}
</body></html>
`;
}

const linkList = (links: readonly Link[]) =>
  `<ul>${links.filter((link) => link.rel !== 'self').map((link) => `<li><a href="${escape(link.href)}">${escape(link.title ?? link.rel)}</a> (${escape(link.rel)})</li>`).join('')}</ul>`;

export function landingHtml(document: { title: string; description: string; links: Link[] }): string {
  return page(document.title, `<p>${escape(document.description)}</p>\n${linkList(document.links)}`);
}

export function conformanceHtml(classes: readonly string[]): string {
  return page('Conformance', `<ul>${classes.map((uri) => `<li>${escape(uri)}</li>`).join('')}</ul>`);
}

export function collectionsHtml(title: string, collections: ReadonlyArray<{ id: string; title: string | null; links: Link[] }>): string {
  const rows = collections.map((c) => {
    const items = c.links.find((link) => link.rel === 'items');
    return `<tr><td><a href="${escape(c.links[0]?.href)}?f=html">${escape(c.title ?? c.id)}</a></td><td>${escape(c.id)}</td><td><a href="${escape(items?.href)}?f=html">features</a></td></tr>`;
  });
  return page(title, `<table><tr><th>collection</th><th>id</th><th></th></tr>${rows.join('')}</table>`);
}

export function collectionHtml(collection: { id: string; title: string | null; links: Link[]; extent: { spatial: { bbox: number[][] } } }): string {
  return page(collection.title ?? collection.id, `<p>id: ${escape(collection.id)}; box (CRS84): ${escape(collection.extent.spatial.bbox[0]?.join(', '))}</p>\n${linkList(collection.links)}`);
}

export function itemsHtml(title: string, properties: readonly string[], body: { features: ReadonlyArray<{ id: number; geometry: unknown; properties: Record<string, unknown> }>; numberMatched: number; links: Link[] }): string {
  const head = `<tr><th>id</th>${properties.map((name) => `<th>${escape(name)}</th>`).join('')}<th>geometry</th></tr>`;
  const rows = body.features.map((feature) => `<tr><td>${escape(feature.id)}</td>${properties.map((name) => `<td>${escape(feature.properties[name])}</td>`).join('')}<td>${escape(JSON.stringify(feature.geometry)).slice(0, 200)}</td></tr>`);
  return page(title, `<p>${body.features.length} of ${body.numberMatched} features</p>\n<table>${head}${rows.join('')}</table>\n${linkList(body.links)}`);
}

export function featureHtml(title: string, feature: { id: number; geometry: unknown; properties: Record<string, unknown> }): string {
  const rows = Object.entries(feature.properties).map(([name, value]) => `<tr><th>${escape(name)}</th><td>${escape(value)}</td></tr>`);
  return page(`${title} ${feature.id}`, `<table>${rows.join('')}<tr><th>geometry</th><td>${escape(JSON.stringify(feature.geometry))}</td></tr></table>`);
}

export function apiHtml(document: { info: { title: string }; paths: Record<string, { get: { summary: string } }> }): string {
  const rows = Object.entries(document.paths).map(([path, item]) => `<tr><td><code>GET ${escape(path)}</code></td><td>${escape(item.get.summary)}</td></tr>`);
  return page(`${document.info.title}: API`, `<table>${rows.join('')}</table>`);
}
