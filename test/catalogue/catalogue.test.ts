import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Quad } from '@rdfjs/types';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishDataset, waitForNoSaga, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requirePostgis } from '../helpers/requirements.js';
import { DCAT, DCT, HYDRA, RDF, dcatApViolations, hvdViolations, objectsOf, ofType, parseRdf, sameGraph, type Format } from './rdf.js';

/**
 * GET /v1/catalogue, the DCAT-AP 3 catalogue of the released open datasets (the contract's "Open
 * data"): which datasets, paging as harvesters follow it, validity against the SEMIC shapes, the
 * three serializations, dereferenceable records, conditional requests, and the failure modes that
 * harvesters' users report.
 */

type Json = Record<string, any>;
const SUFFIX: Record<Format, string> = { turtle: '.ttl', jsonld: '.jsonld', rdfxml: '.rdf' };
const MEDIA_TYPE: Record<Format, string> = { turtle: 'text/turtle', jsonld: 'application/ld+json', rdfxml: 'application/rdf+xml' };
const FORMATS: Format[] = ['turtle', 'jsonld', 'rdfxml'];
const PAGE_SIZE = 2;
const HVD_METADATA = {
  license: 'CC0', keywords: ['air quality'], themes: ['ENVI'], accrualPeriodicity: 'CONT', hvdCategories: ['c_dd313021'],
  contactEmail: 'air@example.org', landingPage: 'https://example.org/air',
};

for (const kind of databaseKinds(import.meta.url)) {
  describe(`the DCAT-AP catalogue (${kind})`, () => {
    let t: TestApp;
    let gateway: FastifyInstance;
    let dataApiUrl: string;
    /** Released open datasets, in the order of their release. */
    const open: PublishedDataset[] = [];
    let closed: PublishedDataset;
    let draftOpen: string;
    before(async () => {
      t = await buildTestApp(kind, { CATALOGUE_PAGE_SIZE: String(PAGE_SIZE), CATALOGUE_EXTENT_REFRESH_MS: '0' });
      gateway = await t.dataApi();
      dataApiUrl = t.ctx.config.dataApi.baseUrl;
      for (let i = 0; i < 4; i++) open.push(await publishDataset(t, { standard: 'STA', openDataAccess: true }));
      closed = await publishDataset(t, { standard: 'STA', openDataAccess: false });
      const draft = await t.app.inject({ method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken), payload: { name: 'Draft open', description: 'not released', openDataAccess: true } });
      draftOpen = draft.json().id;
      await waitForNoSaga(t, draftOpen);
      const hvd = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${open[0]!.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { catalogue: HVD_METADATA } });
      assert.equal(hvd.statusCode, 200, hvd.body);
    });
    after(() => t.close());

    const get = (url: string, headers: Record<string, string> = {}) => gateway.inject({ method: 'GET', url, headers });
    const datasetIri = (id: string) => `${dataApiUrl}/v1/datasets/${id}`;
    const read = async (url: string, format: Format) => {
      const response = await get(url);
      assert.equal(response.statusCode, 200, response.body.slice(0, 500));
      assert.equal(response.headers['content-type'], `${MEDIA_TYPE[format]}; charset=utf-8`);
      return { response, quads: await parseRdf(response.body, format) };
    };
    const datasetsOf = (quads: readonly Quad[]) => objectsOf(quads, `${dataApiUrl}/v1/catalogue`, `${DCAT}dataset`).map((node) => node.value);
    const nextOf = (quads: readonly Quad[]) => {
      const next = objectsOf(quads, null, `${HYDRA}next`).map((node) => node.value);
      const nextPage = objectsOf(quads, null, `${HYDRA}nextPage`).map((node) => node.value);
      assert.deepEqual(next, nextPage, 'hydra:next and hydra:nextPage agree');
      assert.ok(next.length <= 1);
      return next[0];
    };

    /** Follows hydra:next from page 1 as a harvester does, refusing a link it has followed before. */
    const harvest = async (format: Format) => {
      const pages: Quad[][] = [];
      const seen = new Set<string>();
      let url: string | undefined = `${dataApiUrl}/v1/catalogue${SUFFIX[format]}`;
      while (url) {
        assert.ok(!seen.has(url), `the next link loops back to ${url}`);
        seen.add(url);
        assert.ok(url.startsWith(`${dataApiUrl}/v1/catalogue${SUFFIX[format]}?page=`) || pages.length === 0, `a next link of another format or base: ${url}`);
        const { quads } = await read(url.slice(dataApiUrl.length), format);
        pages.push(quads);
        url = nextOf(quads);
        assert.ok(pages.length < 50);
      }
      return pages;
    };

    it('lists exactly the released open datasets, each once, following hydra:next to a last page without one', async () => {
      for (const format of FORMATS) {
        const pages = await harvest(format);
        assert.equal(pages.length, Math.ceil(open.length / PAGE_SIZE), format);
        const listed = pages.flatMap(datasetsOf);
        assert.deepEqual([...listed].sort(), open.map((dataset) => datasetIri(dataset.datasetId)).sort(), format);
        for (const quads of pages) {
          assert.deepEqual(objectsOf(quads, null, `${HYDRA}totalItems`).map((node) => Number(node.value)), [open.length]);
          assert.deepEqual(objectsOf(quads, null, `${HYDRA}itemsPerPage`).map((node) => Number(node.value)), [PAGE_SIZE]);
        }
        const catalogueTriples = pages.map((quads) => quads.filter((quad) => quad.subject.value === `${dataApiUrl}/v1/catalogue` && ![`${DCAT}dataset`, `${DCAT}service`].includes(quad.predicate.value)));
        for (const own of catalogueTriples) assert.ok(sameGraph(own, catalogueTriples[0]!), 'the catalogue\'s own triples are the same on every page');
      }
    });

    it('every page validates against the SEMIC DCAT-AP 3.0.1 shapes with 0 violations; an HVD record against the HVD shapes too', async () => {
      for (const quads of await harvest('turtle')) assert.deepEqual(await dcatApViolations(quads), []);
      const { quads } = await read(`/v1/datasets/${open[0]!.datasetId}.ttl`, 'turtle');
      assert.deepEqual(await dcatApViolations(quads), []);
      assert.deepEqual(await hvdViolations(quads), []);
      assert.ok(objectsOf(quads, datasetIri(open[0]!.datasetId), 'http://data.europa.eu/r5r/hvdCategory').some((node) => node.value === 'http://data.europa.eu/bna/c_dd313021'));
      // The shapes find what is wrong: a record stripped of its title and with an untyped licence has violations.
      const broken = quads.filter((quad) => !(quad.subject.value === datasetIri(open[0]!.datasetId) && quad.predicate.value === `${DCT}title`))
        .filter((quad) => !(quad.predicate.value === `${RDF}type` && quad.object.value === `${DCT}LicenseDocument`));
      assert.ok((await dcatApViolations(broken)).length >= 2);
    });

    it('the three serializations carry the same graph, but for the paging links, which keep to their format', async () => {
      const graphs = await Promise.all(FORMATS.map(async (format) => (await read(`/v1/catalogue${SUFFIX[format]}`, format)).quads));
      const unpaged = (quads: readonly Quad[]) => quads.filter((quad) => !quad.predicate.value.startsWith(HYDRA) && !quad.subject.value.includes('/v1/catalogue.'));
      assert.ok(sameGraph(unpaged(graphs[0]!), unpaged(graphs[1]!)), 'Turtle and JSON-LD');
      assert.ok(sameGraph(unpaged(graphs[0]!), unpaged(graphs[2]!)), 'Turtle and RDF/XML');
      for (const [i, format] of FORMATS.entries()) {
        for (const link of objectsOf(graphs[i]!, null, `${HYDRA}first`)) assert.ok(link.value.startsWith(`${dataApiUrl}/v1/catalogue${SUFFIX[format]}?page=`), link.value);
      }
      const record = await Promise.all(FORMATS.map(async (format) => (await read(`/v1/datasets/${open[1]!.datasetId}${SUFFIX[format]}`, format)).quads));
      assert.ok(sameGraph(record[0]!, record[1]!) && sameGraph(record[0]!, record[2]!));
    });

    it('has no relative URL, no untyped object, no licence as a literal, no date-time without a zone', async () => {
      for (const format of FORMATS) {
        const { quads } = await read(`/v1/catalogue${SUFFIX[format]}?page=1`, format);
        const typed = new Set(quads.filter((quad) => quad.predicate.value === `${RDF}type`).map((quad) => quad.subject.value));
        for (const quad of quads) {
          for (const node of [quad.subject, quad.object]) {
            if (node.termType === 'NamedNode') assert.match(node.value, /^(https?:\/\/[^/]+|mailto:[^@]+@)/, `${format}: ${node.value} is not absolute`);
            assert.notEqual(node.termType, 'BlankNode', `${format}: a blank node under ${quad.predicate.value}`);
          }
          if (quad.predicate.value !== `${RDF}type` && quad.object.termType === 'NamedNode') assert.ok(typed.has(quad.object.value), `${format}: ${quad.object.value} (${quad.predicate.value}) has no rdf:type`);
          if (quad.object.termType === 'Literal' && quad.object.datatype.value.endsWith('#dateTime')) assert.match(quad.object.value, /(Z|[+-]\d\d:\d\d)$/, quad.object.value);
          if (quad.predicate.value === `${DCT}license`) assert.equal(quad.object.termType, 'NamedNode');
        }
      }
    });

    it('a page past the end is an empty catalogue, never page 1 again', async () => {
      const last = Math.ceil(open.length / PAGE_SIZE);
      const { quads } = await read(`/v1/catalogue.ttl?page=${last + 1}`, 'turtle');
      assert.deepEqual(datasetsOf(quads), []);
      assert.equal(nextOf(quads), undefined);
      assert.deepEqual(ofType(quads, `${DCAT}Catalog`), [`${dataApiUrl}/v1/catalogue`]);
      assert.deepEqual(await dcatApViolations(quads), []);
      const far = await read('/v1/catalogue.ttl?page=1000000', 'turtle');
      assert.deepEqual(datasetsOf(far.quads), []);
    });

    it('negotiates Turtle (the default), JSON-LD and RDF/XML; any other Accept answers 406; a bad page or modified_since 400', async () => {
      assert.equal((await get('/v1/catalogue')).headers['content-type'], 'text/turtle; charset=utf-8');
      assert.equal((await get('/v1/catalogue', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' })).headers['content-type'], 'text/turtle; charset=utf-8');
      assert.equal((await get('/v1/catalogue', { accept: 'application/ld+json' })).headers['content-type'], 'application/ld+json; charset=utf-8');
      assert.equal((await get('/v1/catalogue', { accept: 'application/rdf+xml;q=0.9, text/turtle;q=0.5' })).headers['content-type'], 'application/rdf+xml; charset=utf-8');
      assert.equal((await get('/v1/catalogue.jsonld', { accept: 'text/turtle' })).headers['content-type'], 'application/ld+json; charset=utf-8', 'the suffix wins');
      const refused = await get('/v1/catalogue', { accept: 'application/json' });
      assert.equal(refused.statusCode, 406);
      assert.equal(refused.json().type, 'urn:platform:error:NOT_ACCEPTABLE');
      for (const page of ['0', '-1', 'x', '1.5', '99999999']) {
        const response = await get(`/v1/catalogue?page=${page}`);
        assert.equal(response.statusCode, 400, page);
        assert.equal(response.json().fieldErrors[0].field, 'page');
      }
      for (const since of ['yesterday', '2024-13-45T00:00:00Z', '2024-05-01T25:00']) {
        const response = await get(`/v1/catalogue?modified_since=${encodeURIComponent(since)}`);
        assert.equal(response.statusCode, 400, since);
        assert.equal(response.json().fieldErrors[0].field, 'modified_since');
      }
    });

    it('dereferences a dataset\'s IRI to its record alone; a dataset not in the catalogue answers 404 whether it exists or not', async () => {
      const id = open[2]!.datasetId;
      const { quads } = await read(`/v1/datasets/${id}`.replace(/$/, ''), 'turtle');
      assert.deepEqual(ofType(quads, `${DCAT}Dataset`), [datasetIri(id)]);
      assert.deepEqual(ofType(quads, `${DCAT}Catalog`), []);
      const negotiated = await get(`/v1/datasets/${id}`, { accept: 'application/ld+json' });
      assert.equal(negotiated.headers['content-type'], 'application/ld+json; charset=utf-8');
      assert.ok(sameGraph(await parseRdf(negotiated.body, 'jsonld'), quads));
      for (const other of [closed.datasetId, draftOpen, '00000000-0000-4000-8000-000000000000']) {
        const response = await get(`/v1/datasets/${other}.ttl`);
        assert.equal(response.statusCode, 404, other);
        assert.equal(response.json().detail, 'No dataset of the open-data catalogue has this IRI');
      }
      assert.equal((await get('/v1/datasets/not-a-uuid.ttl')).statusCode, 404);
    });

    /** The catalogue as it is once Last-Modified is sent: the second after the last change must have passed. */
    const settledCatalogue = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const response = await get('/v1/catalogue.ttl');
      assert.ok(response.headers['last-modified'], 'Last-Modified is sent once the second of the last change has passed');
      return response;
    };

    it('answers 304 to If-None-Match and If-Modified-Since; a metadata change moves the ETag, Last-Modified and dct:modified', async () => {
      const first = await settledCatalogue();
      const etag = String(first.headers.etag);
      const lastModified = String(first.headers['last-modified']);
      assert.match(etag, /^"[\w-]+"$/);
      assert.equal((await get('/v1/catalogue.ttl', { 'if-none-match': etag })).statusCode, 304);
      assert.equal((await get('/v1/catalogue.ttl', { 'if-modified-since': lastModified })).statusCode, 304);
      assert.notEqual((await get('/v1/catalogue.jsonld', { 'if-none-match': etag })).statusCode, 304, 'each format has its own ETag');
      const changed = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${open[1]!.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { catalogue: { keywords: ['changed'] } } });
      assert.equal(changed.statusCode, 200, changed.body);
      // At once, in the same second: the ETag says it changed, and If-Modified-Since alone does too.
      const after = await get('/v1/catalogue.ttl', { 'if-none-match': etag });
      assert.equal(after.statusCode, 200);
      assert.notEqual(after.headers.etag, etag);
      assert.equal((await get('/v1/catalogue.ttl', { 'if-modified-since': lastModified })).statusCode, 200);
      assert.ok(Date.parse(String((await settledCatalogue()).headers['last-modified'])) > Date.parse(lastModified));
      const record = await parseRdf((await get(`/v1/datasets/${open[1]!.datasetId}.ttl`)).body, 'turtle');
      const modified = objectsOf(record, datasetIri(open[1]!.datasetId), `${DCT}modified`).map((node) => Date.parse(node.value));
      assert.ok(modified[0]! > Date.parse(lastModified), 'the merge patch moved dct:modified');
      assert.deepEqual(objectsOf(record, datasetIri(open[1]!.datasetId), `${DCAT}keyword`).map((node) => node.value), ['changed']);
    });

    it('modified_since lists only the records changed after it, with absolute paging links that keep it', async () => {
      const before = new Date(Date.now() - 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const changed = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${open[3]!.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { catalogue: { themes: ['TRAN'] } } });
      assert.equal(changed.statusCode, 200);
      const { quads } = await read(`/v1/catalogue.ttl?modified_since=${encodeURIComponent(before.toISOString())}`, 'turtle');
      assert.deepEqual(datasetsOf(quads), [datasetIri(open[3]!.datasetId)]);
      assert.deepEqual(objectsOf(quads, null, `${HYDRA}totalItems`).map((node) => Number(node.value)), [1]);
      for (const link of objectsOf(quads, null, `${HYDRA}first`)) assert.ok(link.value.includes(`modified_since=${encodeURIComponent(before.toISOString())}`), link.value);
      const future = await read('/v1/catalogue.ttl?modified_since=2999-01-01', 'turtle');
      assert.deepEqual(datasetsOf(future.quads), []);
    });

    it('a dataset unreleased or made closed leaves the catalogue at once', async () => {
      const leaving = await publishDataset(t, { standard: 'STA', openDataAccess: true });
      const listed = async () => (await harvest('turtle')).flatMap(datasetsOf);
      assert.ok((await listed()).includes(datasetIri(leaving.datasetId)));
      const closedNow = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${leaving.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { openDataAccess: false } });
      assert.equal(closedNow.statusCode, 200);
      assert.ok(!(await listed()).includes(datasetIri(leaving.datasetId)));
      assert.equal((await get(`/v1/datasets/${leaving.datasetId}.ttl`)).statusCode, 404);
      await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${leaving.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { openDataAccess: true } });
      assert.ok((await listed()).includes(datasetIri(leaving.datasetId)));
      const before = await settledCatalogue();
      const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${leaving.datasetId}/unrelease`, headers: bearer(t.adminToken) });
      assert.equal(unreleased.statusCode, 202, unreleased.body);
      assert.ok(!(await listed()).includes(datasetIri(leaving.datasetId)));
      // A client holding the catalogue from before is told it changed.
      const conditional = await get('/v1/catalogue.ttl', { 'if-modified-since': String(before.headers['last-modified']) });
      assert.equal(conditional.statusCode, 200);
    });

    it('a record that cannot be described is left out with a log line; the rest of the catalogue answers', async () => {
      const broken = await publishDataset(t, { standard: 'STA', openDataAccess: true });
      // A licence code the EU table no longer holds (a table updated under stored metadata).
      await sql`update datasets set catalogue = ${JSON.stringify({ license: 'WITHDRAWN_LICENCE' })}::jsonb where id = ${broken.datasetId}`.execute(t.ctx.db);
      const lines: Json[] = [];
      const logged = await buildLoggedGateway(t, lines);
      try {
        const response = await logged.inject({ method: 'GET', url: '/v1/catalogue.ttl?page=1' });
        assert.equal(response.statusCode, 200, response.body.slice(0, 300));
        const all = [];
        for (let page = 1; page <= Math.ceil((open.length + 2) / PAGE_SIZE) + 1; page++) {
          all.push(...datasetsOf(await parseRdf((await logged.inject({ method: 'GET', url: `/v1/catalogue.ttl?page=${page}` })).body, 'turtle')));
        }
        assert.ok(!all.includes(datasetIri(broken.datasetId)));
        for (const dataset of open) assert.ok(all.includes(datasetIri(dataset.datasetId)));
        assert.ok(lines.some((line) => line.msg === 'catalogue: a dataset record left out' && line.datasetId === broken.datasetId), JSON.stringify(lines.slice(-5)));
        assert.equal((await logged.inject({ method: 'GET', url: `/v1/datasets/${broken.datasetId}.ttl` })).statusCode, 404);
      } finally {
        await logged.close();
        await sql`update datasets set open_data_access = false where id = ${broken.datasetId}`.execute(t.ctx.db);
      }
    });

    it('a description with characters XML cannot carry still makes well-formed RDF/XML, the same graph as Turtle', async () => {
      const odd = await publishDataset(t, { standard: 'STA', openDataAccess: true });
      const changed = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${odd.datasetId}/released/meta`, headers: bearer(t.adminToken), payload: { description: 'bell \u0007 and <tags> & "quotes" \uD83D\uDE00' } });
      assert.equal(changed.statusCode, 200, changed.body);
      const xml = await read(`/v1/datasets/${odd.datasetId}.rdf`, 'rdfxml');
      const ttl = await read(`/v1/datasets/${odd.datasetId}.ttl`, 'turtle');
      assert.ok(sameGraph(xml.quads, ttl.quads));
      assert.deepEqual(objectsOf(ttl.quads, datasetIri(odd.datasetId), `${DCT}description`).map((node) => node.value), ['bell  and <tags> & "quotes" \uD83D\uDE00']);
      await t.app.inject({ method: 'POST', url: `/v1/datasets/${odd.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    });
  });
}

/** A second data API on the same context whose log lines land in `lines` (the catalogue logs through the request's logger). */
async function buildLoggedGateway(t: TestApp, lines: Json[]): Promise<FastifyInstance> {
  const { buildDataApiApp } = await import('../../src/data-api/gateway.app.js');
  const { default: pino } = await import('pino');
  const logger = pino({ level: 'info' }, { write: (line: string) => { lines.push(JSON.parse(line)); } });
  const app = await buildDataApiApp(t.ctx, { logger, routePollMs: 50 });
  await app.ready();
  return app;
}

/** dct:spatial and dct:temporal come from the data of the dataset's named APIs (PostGIS reads their geometries). */
describe('the catalogue\'s records follow the data (postgres, PostGIS)', { skip: missing(await requirePostgis()) }, () => {
  let t: TestApp;
  let gateway: FastifyInstance;
  before(async () => {
    t = await buildTestApp('postgres', { CATALOGUE_EXTENT_REFRESH_MS: '0' });
    gateway = await t.dataApi();
  });
  after(() => t?.close());

  const recordOf = async (id: string) => {
    const response = await gateway.inject({ method: 'GET', url: `/v1/datasets/${id}.ttl` });
    assert.equal(response.statusCode, 200, response.body);
    const quads = await parseRdf(response.body, 'turtle');
    assert.deepEqual(await dcatApViolations(quads), []);
    const iri = `${t.ctx.config.dataApi.baseUrl}/v1/datasets/${id}`;
    return {
      etag: response.headers.etag,
      bbox: objectsOf(quads, `${iri}#spatial`, `${DCAT}bbox`).map((node) => node.value),
      start: objectsOf(quads, `${iri}#temporal`, `${DCAT}startDate`).map((node) => node.value),
      end: objectsOf(quads, `${iri}#temporal`, `${DCAT}endDate`).map((node) => node.value),
      downloads: quads.filter((quad) => quad.predicate.value === `${DCAT}downloadURL`).map((quad) => quad.object.value).sort(),
    };
  };
  /** Each download distribution's URL answers the file (anonymously: the datasets are open data). */
  const assertDownloadsAnswer = async (urls: string[]) => {
    for (const url of urls) {
      const response = await gateway.inject({ method: 'HEAD', url: url.slice(t.ctx.config.dataApi.baseUrl.length) });
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
      assert.match(String(response.headers['content-disposition']), /^attachment; filename=/);
    }
  };

  it('an OWS API: the box of its features and the span of their date-time properties, moving as features are added', async () => {
    const dataset = await publishDataset(t, { standard: 'OWS', slug: 'sites', openDataAccess: true });
    const empty = await recordOf(dataset.datasetId);
    assert.deepEqual([empty.bbox, empty.start, empty.end, empty.downloads], [[], [], [], []], 'no data, no extent, no collection to download');
    assert.equal((await dataset.request('POST', '/collections', { name: 'sites', geometryType: 'Point', properties: { seen: 'date-time' } })).statusCode, 201);
    const site = (x: number, y: number, seen: string | null) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties: { seen } });
    const added = await dataset.request('POST', '/collections/sites/items', { type: 'FeatureCollection', features: [site(8.6, 50.1, '2024-05-01T10:00:00Z'), site(8.7, 50.2, '2024-06-01T00:00:00+02:00'), site(8.65, 50.15, null)] });
    assert.equal(added.statusCode, 201, added.body);
    const record = await recordOf(dataset.datasetId);
    assert.deepEqual(record.bbox, ['POLYGON((8.6 50.1, 8.7 50.1, 8.7 50.2, 8.6 50.2, 8.6 50.1))']);
    assert.deepEqual(record.start, ['2024-05-01T10:00:00.000Z']);
    assert.deepEqual(record.end, ['2024-05-31T22:00:00.000Z']);
    assert.deepEqual(record.downloads, ['/collections/sites/download.csv', '/collections/sites/download.geojson', '/download.gpkg'].map((path) => `${dataset.publicBase}${path}`));
    await assertDownloadsAnswer(record.downloads);
    assert.equal((await dataset.request('POST', '/collections/sites/items', site(9.5, 51.5, null))).statusCode, 201);
    const grown = await recordOf(dataset.datasetId);
    assert.deepEqual(grown.bbox, ['POLYGON((8.6 50.1, 9.5 50.1, 9.5 51.5, 8.6 51.5, 8.6 50.1))']);
    assert.notEqual(grown.etag, record.etag);
  });

  it('an STA API: the box of its Things\' Locations and the phenomenon times of its Observations', async () => {
    const dataset = await publishDataset(t, { standard: 'STA', openDataAccess: true });
    const thing = await dataset.request('POST', '/Things', {
      name: 'station', description: 'an air station',
      Locations: [{ name: 'here', description: 'the roof', encodingType: 'application/geo+json', location: { type: 'Point', coordinates: [13.4, 52.5] } }],
      Datastreams: [{
        name: 'pm10', description: 'PM10', observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
        unitOfMeasurement: { name: 'microgram per cubic metre', symbol: 'ug/m3', definition: 'http://unitsofmeasure.org/ucum.html#para-30' },
        Sensor: { name: 'sensor', description: 'a sensor', encodingType: 'application/pdf', metadata: 'https://example.org/sensor.pdf' },
        ObservedProperty: { name: 'PM10', description: 'particulate matter', definition: 'https://example.org/pm10' },
        Observations: [{ phenomenonTime: '2024-01-01T00:00:00Z', result: 10 }, { phenomenonTime: '2024-03-01T12:00:00Z', result: 12 }],
      }],
    });
    assert.equal(thing.statusCode, 201, thing.body);
    const record = await recordOf(dataset.datasetId);
    assert.deepEqual(record.bbox, ['POLYGON((13.4 52.5, 13.4 52.5, 13.4 52.5, 13.4 52.5, 13.4 52.5))']);
    assert.deepEqual(record.start, ['2024-01-01T00:00:00.000Z']);
    assert.deepEqual(record.end, ['2024-03-01T12:00:00.000Z']);
    assert.deepEqual(record.downloads, [`${dataset.publicBase}/download/observations.csv`, `${dataset.publicBase}/download/things.geojson`]);
    await assertDownloadsAnswer(record.downloads);
  });
});

/**
 * At the default settings a page is answered as last made while no record changed: every change
 * the catalogue shows (a metadata patch, a release, an unrelease, a dataset closed) is seen by the
 * next request all the same.
 */
describe('the catalogue answers a page again only while nothing changed (pglite)', () => {
  let t: TestApp;
  let gateway: FastifyInstance;
  before(async () => {
    t = await buildTestApp('pglite');
    gateway = await t.dataApi();
  });
  after(() => t?.close());

  const listed = async () => {
    const response = await gateway.inject({ method: 'GET', url: '/v1/catalogue.ttl' });
    assert.equal(response.statusCode, 200);
    const quads = await parseRdf(response.body, 'turtle');
    return { etag: response.headers.etag, datasets: objectsOf(quads, `${t.ctx.config.dataApi.baseUrl}/v1/catalogue`, `${DCAT}dataset`).map((node) => node.value.split('/').at(-1)), quads };
  };
  const patch = (id: string, payload: Json) => t.app.inject({ method: 'PATCH', url: `/v1/datasets/${id}/released/meta`, headers: bearer(t.adminToken), payload });

  it('a metadata patch, a release, a dataset closed and an unrelease show at the next request', async () => {
    const first = await publishDataset(t, { standard: 'STA', openDataAccess: true });
    const before = await listed();
    assert.deepEqual(before.datasets, [first.datasetId]);
    assert.equal((await listed()).etag, before.etag, 'the same page again');
    assert.equal((await patch(first.datasetId, { catalogue: { keywords: ['fresh'] } })).statusCode, 200);
    const patched = await listed();
    assert.notEqual(patched.etag, before.etag);
    assert.deepEqual(objectsOf(patched.quads, `${t.ctx.config.dataApi.baseUrl}/v1/datasets/${first.datasetId}`, `${DCAT}keyword`).map((node) => node.value), ['fresh']);
    const second = await publishDataset(t, { standard: 'STA', openDataAccess: true });
    assert.deepEqual((await listed()).datasets, [first.datasetId, second.datasetId]);
    assert.equal((await patch(second.datasetId, { openDataAccess: false })).statusCode, 200);
    assert.deepEqual((await listed()).datasets, [first.datasetId]);
    assert.equal((await t.app.inject({ method: 'POST', url: `/v1/datasets/${first.datasetId}/unrelease`, headers: bearer(t.adminToken) })).statusCode, 202);
    assert.deepEqual((await listed()).datasets, []);
  });
});
