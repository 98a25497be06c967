import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from './helpers/test-app.js';

/**
 * The OpenAPI 3.1 document at /openapi.json is generated from the route schemas: every /v1
 * operation the app serves is in it with its error answers, and Swagger UI shows it at /docs.
 * The document does not depend on the database, so PGlite is enough.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** The paths the foundation must document (users and datapools are added when they are registered). */
const REQUIRED_PATHS = [
  '/v1/permissions', '/v1/permissions/{id}',
  '/v1/roles', '/v1/roles/{id}',
  '/v1/groups', '/v1/groups/{id}', '/v1/groups/{groupId}/assignments',
  '/v1/assignments', '/v1/assignments/{id}',
];

/** `/v1/groups/{groupId}/x` and `/v1/groups/:id/x` name the same route. */
const shape = (path: string) => path.replace(/\{[^}]+\}/g, '{}').replace(/:[^/|]+(\|:[^/]+)*/g, '{}');

/**
 * Every method and path the app routes under /v1, read from Fastify's route tree (a line per
 * node: indentation gives the depth, the text the path piece and its methods).
 */
function routedOperations(app: FastifyInstance): Set<string> {
  const operations = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const path = stack.join('');
    if (!path.startsWith('/v1/') || !match[3]) continue;
    for (const method of match[3].split(',').map((m) => m.trim().toLowerCase())) {
      if (method !== 'head' && method !== 'options') operations.add(`${method} ${shape(path)}`);
    }
  }
  return operations;
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await buildTestApp('pglite');
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(response.statusCode, 200);
    doc = response.json();
  });
  after(() => t.close());

  it('is OpenAPI 3.1.0 served as JSON without a token', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(typeof doc.info?.title, 'string');
    assert.equal(typeof doc.info?.version, 'string');
    assert.equal(doc.servers?.[0]?.url, t.ctx.config.api.baseUrl);
  });

  it('documents every path the foundation serves', () => {
    for (const path of REQUIRED_PATHS) assert.ok(doc.paths[path], `missing ${path}`);
  });

  it('documents exactly the operations the app routes under /v1, and nothing outside it', () => {
    const documented = new Set<string>();
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      assert.ok(path.startsWith('/v1/'), `${path} is documented but is not an API path`);
      for (const method of METHODS) if (item[method]) documented.add(`${method} ${shape(path)}`);
    }
    const routed = routedOperations(t.app);
    assert.ok(routed.size >= 15, `route tree parsing found only ${[...routed].join(', ')}`);
    assert.deepEqual([...documented].sort(), [...routed].sort());
  });

  it('documents users and datapools paths when they are routed', () => {
    const routed = [...routedOperations(t.app)];
    for (const prefix of ['/v1/users', '/v1/datapools']) {
      const routedHere = routed.filter((operation) => operation.split(' ')[1]!.startsWith(prefix));
      const documentedHere = Object.keys(doc.paths).filter((path) => path.startsWith(prefix));
      assert.equal(documentedHere.length > 0, routedHere.length > 0, `${prefix}: routed ${routedHere.length}, documented ${documentedHere.length}`);
    }
  });

  it('gives every operation a summary, tags, a success answer, 401 (HTML), 500 and its error statuses', () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of METHODS) {
        const operation = item[method];
        if (!operation) continue;
        const where = `${method.toUpperCase()} ${path}`;
        assert.equal(typeof operation.summary, 'string', `${where}: summary`);
        assert.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${where}: tags`);
        const statuses = Object.keys(operation.responses ?? {});
        assert.ok(statuses.some((status) => /^2\d\d$/.test(status)), `${where}: no success answer`);
        assert.ok(operation.responses['401'], `${where}: no 401`);
        assert.ok(operation.responses['401'].content?.['text/html'], `${where}: 401 is not HTML`);
        assert.ok(operation.responses['500'], `${where}: no 500`);
        assert.ok(operation.responses['403'], `${where}: no 403`);
        const hasPathId = (operation.parameters ?? []).some((p: any) => p.in === 'path');
        if (hasPathId || method !== 'get') assert.ok(operation.responses['400'], `${where}: no 400`);
        if (hasPathId) assert.ok(operation.responses['404'], `${where}: no 404`);
        // Every write takes a JSON body, except the lifecycle actions (POST .../stage and the like).
        const action = method === 'post' && /\/(stage|unstage|release|unrelease|restart)$/.test(where);
        if ((method === 'post' || method === 'put' || method === 'patch') && !action) {
          for (const status of ['400', '413', '415']) assert.ok(operation.responses[status], `${where}: no ${status}`);
          assert.ok(operation.requestBody?.content?.['application/json'], `${where}: no JSON request body`);
        }
        if (action) assert.equal(operation.requestBody, undefined, `${where}: an action takes no body`);
        if (operation.parameters?.some((p: any) => p.in === 'query' && p.name === 'page')) {
          assert.ok(operation.responses['400'], `${where}: a list without 400 for bad list parameters`);
        }
      }
    }
  });

  it('describes problem answers with the problem fields', () => {
    const problem = doc.paths['/v1/groups/{id}'].get.responses['404'];
    const schema = problem.content?.['application/json']?.schema ?? problem.content?.['application/problem+json']?.schema;
    assert.ok(schema, JSON.stringify(problem));
    for (const field of ['type', 'title', 'status', 'detail', 'instance']) assert.ok(schema.properties?.[field], `problem without ${field}`);
  });

  it('declares problem answers as application/problem+json', () => {
    const problem = doc.paths['/v1/groups/{id}'].get.responses['404'];
    assert.ok(problem.content?.['application/problem+json'], `problem answers are documented as ${Object.keys(problem.content ?? {}).join(', ')}`);
  });

  it('declares the list parameters and the Page envelope of a list', () => {
    const list = doc.paths['/v1/groups'].get;
    const names = list.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name);
    for (const name of ['page', 'size', 'sort', 'id', 'createdAtFrom', 'createdAtTo', 'modifiedAtFrom', 'modifiedAtTo', 'name', 'description', 'q']) {
      assert.ok(names.includes(name), `GET /v1/groups without parameter ${name}`);
    }
    const page = list.responses['200'].content['application/json'].schema;
    for (const field of ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'size', 'totalElements', 'totalPages', 'sort', 'pageable']) {
      assert.ok(page.properties?.[field], `Page without ${field}`);
    }
  });

  it('declares the bearer security scheme and requires it', () => {
    assert.deepEqual(doc.components?.securitySchemes?.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    const required = doc.security ?? [];
    assert.ok(required.some((requirement: Record<string, unknown>) => 'bearerAuth' in requirement));
  });

  it('serves Swagger UI at /docs without a token', async () => {
    let response = await t.app.inject({ method: 'GET', url: '/docs' });
    for (let hops = 0; hops < 3 && response.statusCode >= 300 && response.statusCode < 400; hops++) {
      const location = new URL(String(response.headers.location), 'http://localhost/docs/');
      response = await t.app.inject({ method: 'GET', url: location.pathname });
    }
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^text\/html/);
    assert.match(response.body, /swagger/i);
    const json = await t.app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(json.statusCode, 200);
    assert.equal(json.json().openapi, '3.1.0');
  });
});
