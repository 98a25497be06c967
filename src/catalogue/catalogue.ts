import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Graph } from './graph.js';
import type { CatalogueDescription, DatasetRecord } from './records.js';
import { catalogueIri, datasetIri, SUFFIXES, type RdfFormat } from './paths.js';
import { downloadsOf } from './downloads.js';
import { ExtentCache } from './extent-cache.js';
import { VOCABULARIES } from './vocabularies.js';

/**
 * The DCAT-AP catalogue of the released open datasets, page by page, and each dataset's record
 * alone. The datasets come from a `CatalogueSource` (the datasets module, wired in app.ts); what the
 * data spans comes from the named APIs' storage, kept a while (ExtentCache). A rendered document is
 * kept by the fingerprint of everything it is made of, so that a page asked for again, or a
 * conditional request, costs the database queries and a hash, not a serialization.
 */

/** A released open dataset as the catalogue reads it: its record but for what its data spans, and where that data is. */
export interface CatalogueEntry extends Omit<DatasetRecord, 'downloads' | 'extent'> {
  /** The PostgreSQL schema holding its named APIs' data. */
  storageSchema: string;
}

export interface CatalogueSource {
  /**
   * The latest change of any record the catalogue holds or held (null: nothing was ever released)
   * and how many datasets it lists (changed after `modifiedSince`): two index reads, which tell
   * whether a page rendered before still holds.
   */
  state(modifiedSince: Date | null): Promise<{ lastModified: Date | null; total: number }>;
  /** The released open datasets in a stable order (first release, then id), whose record changed after `modifiedSince`. */
  page(query: { offset: number; limit: number; modifiedSince: Date | null }): Promise<CatalogueEntry[]>;
  /** One dataset, when it is in the catalogue. */
  entry(id: string): Promise<CatalogueEntry | undefined>;
}

export interface CatalogueSettings extends Omit<CatalogueDescription, 'modified' | 'dataApiUrl'> {
  pageSize: number;
  /** How old what the data spans may grow: a page rendered this long ago is rendered again. */
  extentRefreshMs: number;
}

/** A document ready to send. */
export interface CatalogueDocument { body: string; etag: string; lastModified: Date | null }

export interface CatalogueServiceDeps {
  source: CatalogueSource;
  extents: ExtentCache;
  dataApiUrl: string;
  settings: CatalogueSettings;
  /** STA_UPSTREAM_URL is set: an upstream server answers every SensorThings API. */
  staUpstream?: boolean;
}

/** Where a record left out is reported: the request's log. */
export interface CatalogueLog { warn(details: object, message: string): void }

type RdfDocuments = typeof import('./rdf-documents.js');

/** The RDF libraries load with the first document rendered (rdf-documents.ts says why). */
let rdfDocuments: Promise<typeof import('./rdf-documents.js')> | undefined;
const rdf = () => (rdfDocuments ??= import('./rdf-documents.js'));

export class CatalogueService {
  /** Rendered documents by the fingerprint of their inputs and format. */
  private readonly rendered = new LRUCache<string, string>({ max: 256, maxSize: 64 * 1024 * 1024, sizeCalculation: (body) => body.length || 1 });

  /**
   * Pages as last answered, by format, page and modified_since, with the state they were made in:
   * while no record changed (the same latest change and count) and what the data spans is fresh
   * enough, a page is answered as it was, without reading its datasets again.
   */
  private readonly pages = new LRUCache<string, { lastModified: number | null; total: number; builtAt: number; document: CatalogueDocument }>({ max: 1024 });

  constructor(private readonly deps: CatalogueServiceDeps) {
    const { settings } = deps;
    if (!VOCABULARIES.licence.has(settings.defaultLicense)) throw new Error(`CATALOGUE_DEFAULT_LICENSE ${settings.defaultLicense} is not a code of the EU licence table`);
    if (!VOCABULARIES.language.has(settings.language)) throw new Error(`CATALOGUE_LANGUAGE ${settings.language} is not a code of the EU language table`);
  }

  get pageSize(): number {
    return this.deps.settings.pageSize;
  }

  /** Page `page` (1-based) of the catalogue; past the end, the catalogue with no dataset. */
  async page(page: number, modifiedSince: Date | null, format: RdfFormat, log: CatalogueLog): Promise<CatalogueDocument> {
    const { pageSize, extentRefreshMs } = this.deps.settings;
    const state = await this.deps.source.state(modifiedSince);
    const key = `${format} ${page} ${modifiedSince?.getTime() ?? ''}`;
    const made = this.pages.get(key);
    if (made && made.lastModified === (state.lastModified?.getTime() ?? null) && made.total === state.total && Date.now() - made.builtAt < extentRefreshMs) return made.document;
    const builtAt = Date.now();
    // The state's count is the page's: read just before it, and the page is kept only under that state.
    const { lastModified, total } = state;
    const entries = await this.deps.source.page({ offset: (page - 1) * pageSize, limit: pageSize, modifiedSince });
    const records = await this.recordsOf(entries);
    const query = modifiedSince ? `&modified_since=${encodeURIComponent(modifiedSince.toISOString())}` : '';
    const pageUrl = (n: number) => `${catalogueIri(this.deps.dataApiUrl)}${SUFFIXES[format]}?page=${n}${query}`;
    // When the cache saw an extent change is not part of the document: left out of its fingerprint.
    const inputs = records.map(({ changedAt: _when, ...record }) => record);
    const document = await this.render(format, { kind: 'page', lastModified, page, pageSize, total, query, inputs }, (graph, documents) => {
      const catalogue = documents.describeCatalogue(graph, this.description(lastModified));
      documents.describePaging(graph, { pageUrl, page, pageSize, totalItems: total });
      for (const record of records) this.describeSafely(documents, graph, log, record, catalogue);
    }, latest(lastModified, ...records.map((record) => record.changedAt)));
    // Kept under the state read before the page: a change in between makes the next request read again.
    this.pages.set(key, { lastModified: state.lastModified?.getTime() ?? null, total: state.total, builtAt, document });
    return document;
  }

  /** A dataset's record alone (its dereferenceable IRI); undefined when it is not in the catalogue. */
  async record(id: string, format: RdfFormat, log: CatalogueLog): Promise<CatalogueDocument | undefined> {
    const entry = await this.deps.source.entry(id);
    if (!entry) return undefined;
    const [record] = await this.recordsOf([entry]);
    let described = true;
    const { changedAt: _when, ...inputs } = record!;
    const document = await this.render(format, { kind: 'record', inputs }, (graph, documents) => {
      described = this.describeSafely(documents, graph, log, record!);
    }, latest(record!.modified, record!.changedAt));
    return described ? document : undefined;
  }

  private description(modified: Date | null): CatalogueDescription {
    const { pageSize: _size, extentRefreshMs: _refresh, ...described } = this.deps.settings;
    return { ...described, dataApiUrl: this.deps.dataApiUrl, modified };
  }

  private async recordsOf(entries: readonly CatalogueEntry[]): Promise<Array<DatasetRecord & { changedAt: Date | null }>> {
    return Promise.all(entries.map(async (entry) => {
      const { extent, changedAt, collectionsBySlug } = await this.deps.extents.of(entry);
      const { storageSchema: _where, ...described } = entry;
      // With STA_UPSTREAM_URL set, an upstream server answers every SensorThings API.
      const apis = this.deps.staUpstream ? entry.apis.map((api) => (api.standard === 'STA' ? { ...api, upstream: true } : api)) : entry.apis;
      const downloads = downloadsOf(datasetIri(this.deps.dataApiUrl, entry.id), apis, collectionsBySlug);
      return { ...described, apis, downloads, extent, changedAt };
    }));
  }

  /**
   * Adds a dataset's record, or leaves it out with a log line when it cannot be described (a code
   * its table no longer holds, say): one bad record never takes the catalogue down.
   */
  private describeSafely(documents: RdfDocuments, graph: Graph, log: CatalogueLog, record: DatasetRecord, catalogue?: Parameters<RdfDocuments['describeDataset']>[3]): boolean {
    const own = new documents.Graph();
    try {
      documents.describeDataset(own, this.description(null), record, catalogue);
    } catch (error) {
      log.warn({ err: error, datasetId: record.id }, 'catalogue: a dataset record left out');
      return false;
    }
    graph.merge(own);
    return true;
  }

  private async render(format: RdfFormat, inputs: object, build: (graph: Graph, documents: RdfDocuments) => void, lastModified: Date | null): Promise<CatalogueDocument> {
    const fingerprint = createHash('sha256').update(format).update(JSON.stringify(inputs)).update(JSON.stringify(this.deps.settings)).digest('base64url');
    let body = this.rendered.get(fingerprint);
    if (body === undefined) {
      const documents = await rdf();
      const graph = new documents.Graph();
      build(graph, documents);
      body = await documents.serialize(graph.toQuads(), format);
      this.rendered.set(fingerprint, body);
    }
    return { body, etag: `"${fingerprint.slice(0, 32)}"`, lastModified };
  }
}

/** The latest of some instants (null when none is known). */
function latest(...instants: Array<Date | null>): Date | null {
  const known = instants.filter((instant): instant is Date => instant !== null);
  return known.length === 0 ? null : new Date(Math.max(...known.map((instant) => instant.getTime())));
}
