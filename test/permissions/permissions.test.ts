import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectFieldError, expectHtml401, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';

/** GET /v1/permissions and /v1/permissions/{id}: the read-only catalogue of the contract. */

const SYSTEM = [
  'USER_READ', 'USER_WRITE', 'GROUP_READ', 'GROUP_WRITE', 'ROLE_READ', 'ROLE_WRITE', 'ASSIGNMENT_READ',
  'ASSIGNMENT_WRITE', 'PERMISSION_READ', 'DATAPOOL_READ', 'DATAPOOL_WRITE',
];
const DATA = [
  'DATASET_READ', 'DATASET_CREATE', 'DATASET_UPDATE', 'DATASET_RELEASE', 'DATASET_DELETE', 'DATASET_PAYLOAD_READ',
  'DATASET_PAYLOAD_WRITE', 'DATASOURCE_READ', 'DATASOURCE_WRITE', 'DATASTRUCTURE_READ', 'DATASTRUCTURE_WRITE',
];
const ALL = [...SYSTEM, ...DATA, 'DATASET_DASHBOARD_READ'];
const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Permission { id: string; name: string; description: string; permissionType: string; category: string; source: string; createdAt: string; modifiedAt: string }

for (const kind of databaseKinds(import.meta.url)) {
  describe(`permissions (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const list = async (query = '', token = t.adminToken) => {
      const response = await t.app.inject({ method: 'GET', url: `/v1/permissions${query}`, headers: bearer(token) });
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/json/);
      const body = response.json();
      assert.ok(Array.isArray(body), 'a plain array, not a Page envelope');
      return body as Permission[];
    };
    const names = (permissions: Permission[]) => permissions.map((p) => p.name);

    it('lists the whole catalogue as a plain array sorted by name ascending', async () => {
      const permissions = await list();
      assert.deepEqual(names(permissions), [...ALL].sort(byName));
      for (const p of permissions) {
        assert.deepEqual(Object.keys(p).sort(), ['category', 'createdAt', 'description', 'id', 'modifiedAt', 'name', 'permissionType', 'source']);
        assert.match(p.id, UUID);
        assert.ok(p.description.length > 0);
        assert.match(p.createdAt, ISO);
        assert.match(p.modifiedAt, ISO);
        const system = SYSTEM.includes(p.name);
        assert.equal(p.permissionType, system ? 'SYSTEM' : 'DATA', p.name);
        assert.equal(p.category, system ? 'TENANT_ADMINISTRATION' : 'DATA', p.name);
        assert.equal(p.source, p.name === 'DATASET_DASHBOARD_READ' ? 'DATASET_DASHBOARD' : 'INTERNAL', p.name);
      }
    });

    it('sorts by name descending with sort=name,desc and by several criteria', async () => {
      assert.deepEqual(names(await list('?sort=name,desc')), [...ALL].sort(byName).reverse());
      const mixed = await list('?sort=permissionType,asc&sort=name,desc');
      assert.deepEqual(names(mixed), [...DATA, 'DATASET_DASHBOARD_READ'].sort(byName).reverse().concat([...SYSTEM].sort(byName).reverse()));
    });

    it('answers 400 to an unknown sort property', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/v1/permissions?sort=colour,asc', headers: bearer(t.adminToken) });
      expectFieldError(response, 'sort');
    });

    it('filters by name, case-insensitively and by substring', async () => {
      assert.deepEqual(names(await list('?name=dataset_payload')), ['DATASET_PAYLOAD_READ', 'DATASET_PAYLOAD_WRITE']);
      assert.deepEqual(names(await list('?name=Group_')), ['GROUP_READ', 'GROUP_WRITE']);
      // % and _ are taken literally, not as wildcards.
      assert.deepEqual(await list('?name=%25'), []);
    });

    it('filters by description and by q (name or description)', async () => {
      const catalogue = await list();
      const dashboard = catalogue.find((p) => p.name === 'DATASET_DASHBOARD_READ')!;
      const word = dashboard.description.split(' ').sort((a, b) => b.length - a.length)[0]!.toUpperCase();
      const byDescription = await list(`?description=${encodeURIComponent(word)}`);
      assert.ok(names(byDescription).includes('DATASET_DASHBOARD_READ'), word);
      assert.ok(byDescription.every((p) => p.description.toUpperCase().includes(word)));
      // q matches the name ...
      assert.deepEqual(names(await list('?q=permission_read')), ['PERMISSION_READ']);
      // ... or the description.
      const byQ = await list(`?q=${encodeURIComponent(word.toLowerCase())}`);
      assert.deepEqual(names(byQ), names(catalogue.filter((p) => p.name.toUpperCase().includes(word) || p.description.toUpperCase().includes(word))));
      assert.deepEqual(await list('?q=no-such-permission-text'), []);
    });

    it('filters by permissionType, category and source', async () => {
      assert.deepEqual(names(await list('?permissionType=SYSTEM')), [...SYSTEM].sort(byName));
      assert.deepEqual(names(await list('?permissionType=DATA')), [...DATA, 'DATASET_DASHBOARD_READ'].sort(byName));
      assert.deepEqual(names(await list('?category=TENANT_ADMINISTRATION')), [...SYSTEM].sort(byName));
      assert.deepEqual(names(await list('?category=DATA')), [...DATA, 'DATASET_DASHBOARD_READ'].sort(byName));
      assert.deepEqual(names(await list('?source=DATASET_DASHBOARD')), ['DATASET_DASHBOARD_READ']);
      assert.deepEqual(names(await list('?source=INTERNAL')), [...SYSTEM, ...DATA].sort(byName));
      assert.deepEqual(names(await list('?permissionType=SYSTEM&source=DATASET_DASHBOARD')), []);
    });

    it('answers 400 to a value outside an enum filter', async () => {
      for (const query of ['permissionType=ADMIN', 'category=SYSTEM', 'source=EXTERNAL']) {
        const response = await t.app.inject({ method: 'GET', url: `/v1/permissions?${query}`, headers: bearer(t.adminToken) });
        expectFieldError(response, query.split('=')[0]!);
      }
    });

    it('filters by a comma-separated and a repeated id list', async () => {
      const catalogue = await list();
      const [a, b, c] = [catalogue[0]!, catalogue[5]!, catalogue[10]!];
      assert.deepEqual(names(await list(`?id=${a.id},${b.id}`)), [a.name, b.name]);
      assert.deepEqual(names(await list(`?id=${a.id}&id=${c.id}`)), [a.name, c.name]);
      assert.deepEqual(await list(`?id=${randomUUID()}`), []);
      const malformed = await t.app.inject({ method: 'GET', url: '/v1/permissions?id=not-a-uuid', headers: bearer(t.adminToken) });
      expectProblem(malformed, 400, 'VALIDATION_FAILED');
    });

    it('filters by createdAt bounds', async () => {
      const catalogue = await list();
      assert.equal((await list('?createdAtFrom=2000-01-01T00:00:00Z')).length, catalogue.length);
      assert.deepEqual(await list('?createdAtTo=2000-01-01T00:00:00Z'), []);
    });

    it('gets one permission by id with an ETag', async () => {
      const [first] = await list('?name=DATASET_DASHBOARD_READ');
      const response = await t.app.inject({ method: 'GET', url: `/v1/permissions/${first!.id}`, headers: bearer(t.adminToken) });
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['etag']), /^"[^"]+"$/);
      assert.deepEqual(response.json(), first);
      assert.equal(response.json().source, 'DATASET_DASHBOARD');
      assert.equal(response.json().permissionType, 'DATA');
    });

    it('answers 404 to an unknown id and 400 to a malformed one', async () => {
      const unknown = await t.app.inject({ method: 'GET', url: `/v1/permissions/${randomUUID()}`, headers: bearer(t.adminToken) });
      expectProblem(unknown, 404, 'NOT_FOUND');
      const malformed = await t.app.inject({ method: 'GET', url: '/v1/permissions/not-a-uuid', headers: bearer(t.adminToken) });
      const body = expectFieldError(malformed, 'id');
      assert.equal(body.instance, '/v1/permissions/not-a-uuid');
    });

    it('answers 403 ACCESS_DENIED without PERMISSION_READ', async () => {
      const [first] = await list();
      const stranger = await t.tokenFor(uniqueEmail('stranger'));
      const reader = await grant(t, uniqueEmail('role-reader'), ['ROLE_READ', 'GROUP_READ']);
      for (const token of [stranger, reader]) {
        expectProblem(await t.app.inject({ method: 'GET', url: '/v1/permissions', headers: bearer(token) }), 403, 'ACCESS_DENIED');
        expectProblem(await t.app.inject({ method: 'GET', url: `/v1/permissions/${first!.id}`, headers: bearer(token) }), 403, 'ACCESS_DENIED');
      }
    });

    it('answers 200 to a caller holding PERMISSION_READ only', async () => {
      const token = await grant(t, uniqueEmail('perm-reader'), ['PERMISSION_READ']);
      assert.equal((await list('', token)).length, ALL.length);
    });

    it('answers 401 with an HTML body without a token', async () => {
      const [first] = await list();
      expectHtml401(await t.app.inject({ method: 'GET', url: '/v1/permissions' }));
      expectHtml401(await t.app.inject({ method: 'GET', url: `/v1/permissions/${first!.id}` }));
    });
  });
}
