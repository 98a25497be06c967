import { scopeColumns } from '../../src/access/scopes.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let counter = 0;
/** A name no other test (or earlier run on the same database) uses. */
const unique = (prefix: string) => `${prefix}-${++counter}-${randomUUID().slice(0, 8)}`;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
interface Datapool {
  id: string; name: string; description: string; contactPerson: { id: string; name: string } | null;
  datasets: string[]; createdAt: string; modifiedAt: string;
}
interface Page<T> { content: T[]; totalElements: number; numberOfElements: number; totalPages: number; number: number; size: number }
interface Problem { type: string; status: number; detail: string; fieldErrors?: { field: string; message: string }[] }

for (const kind of databaseKinds(import.meta.url)) {
  describe(`datapools (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const call = async (method: Method, url: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) => {
      const token = options.token === undefined ? t.adminToken : options.token;
      const response = await t.app.inject({
        method,
        url,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...options.headers },
        ...(options.body !== undefined ? { payload: options.body as object } : {}),
      });
      return { status: response.statusCode, headers: response.headers, text: response.body, json: <T = any>() => response.json() as T };
    };

    const assertProblem = (response: Awaited<ReturnType<typeof call>>, status: number, code: string, field?: string) => {
      assert.equal(response.status, status, response.text);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
      const problem = response.json<Problem>();
      assert.equal(problem.type, `urn:platform:error:${code}`);
      assert.equal(problem.status, status);
      if (field !== undefined) {
        assert.ok(problem.fieldErrors?.some((e) => e.field === field), `expected a field error on ${field}: ${response.text}`);
      }
      return problem;
    };

    const createPool = async (overrides: Record<string, unknown> = {}) => {
      const response = await call('POST', '/v1/datapools', { body: { name: unique('pool'), description: 'A datapool for tests', ...overrides } });
      assert.equal(response.status, 201, response.text);
      return response.json<Datapool>();
    };

    const insertUser = async (firstName = 'Ada', lastName = 'Lovelace') => {
      const id = randomUUID();
      await t.ctx.db.insertInto('users').values({ id, email: `${unique('person')}@example.com`, first_name: firstName, last_name: lastName, title: 'OTHER' }).execute();
      return id;
    };

    const insertGroup = async () => {
      const id = randomUUID();
      await t.ctx.db.insertInto('groups').values({ id, name: unique('group'), description: 'test group' }).execute();
      return id;
    };

    const roleId = async (name: string) =>
      (await t.ctx.db.selectFrom('roles').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;

    /**
     * A user `reader-<n>@example.com` in a group holding, for each grant, a custom SYSTEM role
     * with exactly those permissions on that scope. Set up in the database directly: the users
     * and roles APIs are not the subject here.
     */
    const readerWith = async (grants: { permissions: string[]; scopeType: 'TENANT' | 'DATAPOOL'; scopeId: string }[]) => {
      const email = `${unique('reader')}@example.com`;
      const userId = randomUUID();
      const groupId = randomUUID();
      await t.ctx.db.insertInto('users').values({ id: userId, email, first_name: 'Reader', last_name: 'Test', title: 'OTHER' }).execute();
      await t.ctx.db.insertInto('groups').values({ id: groupId, name: unique('readers'), description: '' }).execute();
      await t.ctx.db.insertInto('group_members').values({ group_id: groupId, user_id: userId }).execute();
      for (const grant of grants) {
        const role = randomUUID();
        await t.ctx.db.insertInto('roles').values({ id: role, name: unique('role'), description: '', role_type: 'SYSTEM' }).execute();
        const permissions = await t.ctx.db.selectFrom('permissions').select('id').where('name', 'in', grant.permissions).execute();
        assert.equal(permissions.length, grant.permissions.length);
        await t.ctx.db.insertInto('role_permissions').values(permissions.map((p) => ({ role_id: role, permission_id: p.id }))).execute();
        await t.ctx.db.insertInto('assignments')
          .values({ id: randomUUID(), group_id: groupId, role_id: role, ...scopeColumns(grant.scopeType, grant.scopeId) }).execute();
      }
      return t.tokenFor(email);
    };

    describe('create, read, change, delete', () => {
      test('POST creates: 201, absolute Location, ETag and the full representation', async () => {
        const contact = await insertUser('Grace', 'Hopper');
        const name = unique('Harbour');
        const response = await call('POST', '/v1/datapools', { body: { name, description: 'Sensors of the harbour', contactPersonId: contact } });
        assert.equal(response.status, 201, response.text);
        const pool = response.json<Datapool>();
        assert.match(pool.id, UUID);
        assert.deepEqual(Object.keys(pool).sort(), ['contactPerson', 'createdAt', 'datasets', 'description', 'id', 'modifiedAt', 'name']);
        assert.equal(pool.name, name);
        assert.equal(pool.description, 'Sensors of the harbour');
        assert.deepEqual(pool.contactPerson, { id: contact, name: 'Grace Hopper' });
        assert.deepEqual(pool.datasets, []);
        assert.match(pool.createdAt, ISO);
        assert.match(pool.modifiedAt, ISO);
        assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datapools/${pool.id}`);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);

        const fetched = await call('GET', `/v1/datapools/${pool.id}`);
        assert.equal(fetched.status, 200);
        assert.deepEqual(fetched.json(), pool);
        assert.equal(fetched.headers['etag'], response.headers['etag']);
      });

      test('contactPerson is null without a contact, and becomes null when the user is deleted', async () => {
        assert.equal((await createPool()).contactPerson, null);
        const contact = await insertUser();
        const pool = await createPool({ contactPersonId: contact });
        await t.ctx.db.deleteFrom('users').where('id', '=', contact).execute();
        assert.equal((await call('GET', `/v1/datapools/${pool.id}`)).json<Datapool>().contactPerson, null);
      });

      test('PUT replaces every field: an omitted contactPersonId clears the contact', async () => {
        const pool = await createPool({ contactPersonId: await insertUser() });
        const name = unique('replaced');
        const response = await call('PUT', `/v1/datapools/${pool.id}`, { body: { name, description: 'new text' } });
        assert.equal(response.status, 200, response.text);
        const updated = response.json<Datapool>();
        assert.equal(updated.id, pool.id);
        assert.equal(updated.name, name);
        assert.equal(updated.description, 'new text');
        assert.equal(updated.contactPerson, null);
        assert.equal(updated.createdAt, pool.createdAt);
        assert.ok(updated.modifiedAt >= pool.modifiedAt);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        assert.deepEqual((await call('GET', `/v1/datapools/${pool.id}`)).json(), updated);
      });

      test('PATCH changes only the given fields; contactPersonId null clears the contact', async () => {
        const contact = await insertUser('Alan', 'Turing');
        const pool = await createPool({ contactPersonId: contact });
        const patched = await call('PATCH', `/v1/datapools/${pool.id}`, { body: { description: 'patched' } });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.json<Datapool>().name, pool.name);
        assert.equal(patched.json<Datapool>().description, 'patched');
        assert.deepEqual(patched.json<Datapool>().contactPerson, { id: contact, name: 'Alan Turing' });
        assert.ok(patched.headers['etag']);

        const cleared = await call('PATCH', `/v1/datapools/${pool.id}`, { body: { contactPersonId: null } });
        assert.equal(cleared.status, 200, cleared.text);
        assert.equal(cleared.json<Datapool>().contactPerson, null);
        assert.equal(cleared.json<Datapool>().description, 'patched');
      });

      test('DELETE answers 204 with no body; the datapool is gone', async () => {
        const pool = await createPool();
        const response = await call('DELETE', `/v1/datapools/${pool.id}`);
        assert.equal(response.status, 204);
        assert.equal(response.text, '');
        assertProblem(await call('GET', `/v1/datapools/${pool.id}`), 404, 'NOT_FOUND');
        assertProblem(await call('DELETE', `/v1/datapools/${pool.id}`), 404, 'NOT_FOUND');
      });

      test('an unknown id answers 404 on every operation', async () => {
        const id = randomUUID();
        assertProblem(await call('GET', `/v1/datapools/${id}`), 404, 'NOT_FOUND');
        assertProblem(await call('PUT', `/v1/datapools/${id}`, { body: { name: 'whatever', description: 'x' } }), 404, 'NOT_FOUND');
        assertProblem(await call('PATCH', `/v1/datapools/${id}`, { body: { description: 'x' } }), 404, 'NOT_FOUND');
        assertProblem(await call('DELETE', `/v1/datapools/${id}`), 404, 'NOT_FOUND');
        assertProblem(await call('GET', `/v1/datapools/${id}/assignments`), 404, 'NOT_FOUND');
      });

      test('without a token: 401 with an HTML body', async () => {
        for (const [method, url] of [['GET', '/v1/datapools'], ['POST', '/v1/datapools'], ['GET', `/v1/datapools/${randomUUID()}`]] as const) {
          const response = await call(method, url, { token: null, ...(method === 'POST' ? { body: { name: 'abc', description: 'x' } } : {}) });
          assert.equal(response.status, 401);
          assert.match(String(response.headers['content-type']), /^text\/html/);
        }
      });
    });

    describe('validation', () => {
      const invalidBodies: [string, Record<string, unknown>, string][] = [
        ['name too short', { name: 'ab', description: 'x' }, 'name'],
        ['name too long', { name: 'n'.repeat(256), description: 'x' }, 'name'],
        ['name only spaces', { name: '     ', description: 'x' }, 'name'],
        ['name missing', { description: 'x' }, 'name'],
        ['name not a string', { name: 12345, description: 'x' }, 'name'],
        ['description empty', { name: 'valid name', description: '' }, 'description'],
        ['description blank', { name: 'valid name', description: '   ' }, 'description'],
        ['description too long', { name: 'valid name', description: 'd'.repeat(4001) }, 'description'],
        ['description missing', { name: 'valid name' }, 'description'],
        ['description not a string', { name: 'valid name', description: true }, 'description'],
        ['unknown field', { name: 'valid name', description: 'x', colour: 'red' }, 'colour'],
        ['read-only field', { name: 'valid name', description: 'x', id: randomUUID() }, 'id'],
        ['datasets is read-only', { name: 'valid name', description: 'x', datasets: [] }, 'datasets'],
        ['contactPersonId not a uuid', { name: 'valid name', description: 'x', contactPersonId: 'not-a-uuid' }, 'contactPersonId'],
        ['contactPersonId a number', { name: 'valid name', description: 'x', contactPersonId: 7 }, 'contactPersonId'],
        ['assignments not an array', { name: 'valid name', description: 'x', assignments: { groupId: randomUUID() } }, 'assignments'],
        ['assignment groupId not a uuid', { name: 'valid name', description: 'x', assignments: [{ groupId: 'g', roleId: randomUUID() }] }, 'assignments[0].groupId'],
        ['assignment roleId missing', { name: 'valid name', description: 'x', assignments: [{ groupId: randomUUID() }] }, 'assignments[0].roleId'],
        ['assignment unknown field', { name: 'valid name', description: 'x', assignments: [{ groupId: randomUUID(), roleId: randomUUID(), scopeId: randomUUID() }] }, 'assignments[0].scopeId'],
      ];

      for (const [label, body, field] of invalidBodies) {
        test(`POST and PUT with ${label}: 400 naming ${field}`, async () => {
          assertProblem(await call('POST', '/v1/datapools', { body }), 400, 'VALIDATION_FAILED', field);
          const pool = await createPool();
          assertProblem(await call('PUT', `/v1/datapools/${pool.id}`, { body }), 400, 'VALIDATION_FAILED', field);
        });
      }

      test('duplicate assignment items: 400 (uniqueItems)', async () => {
        const item = { groupId: await insertGroup(), roleId: await roleId('Data Consumer') };
        assertProblem(await call('POST', '/v1/datapools', { body: { name: unique('pool'), description: 'x', assignments: [item, { ...item }] } }), 400, 'VALIDATION_FAILED', 'assignments');
      });

      test('PATCH applies the same rules to the fields it is given', async () => {
        const pool = await createPool();
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { name: 'ab' } }), 400, 'VALIDATION_FAILED', 'name');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { description: '' } }), 400, 'VALIDATION_FAILED', 'description');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { createdAt: pool.createdAt } }), 400, 'VALIDATION_FAILED', 'createdAt');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { contactPersonId: 'x' } }), 400, 'VALIDATION_FAILED', 'contactPersonId');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { contactPersonId: randomUUID() } }), 400, 'VALIDATION_FAILED', 'contactPersonId');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { assignments: [{ groupId: randomUUID() }] } }), 400, 'VALIDATION_FAILED', 'assignments[0].roleId');
        // Nothing changed.
        assert.deepEqual((await call('GET', `/v1/datapools/${pool.id}`)).json(), pool);
      });

      test('an unknown contactPersonId: 400 naming contactPersonId, nothing created', async () => {
        const name = unique('orphan');
        assertProblem(await call('POST', '/v1/datapools', { body: { name, description: 'x', contactPersonId: randomUUID() } }), 400, 'VALIDATION_FAILED', 'contactPersonId');
        assert.equal((await call('GET', `/v1/datapools?name=${name}`)).json<Page<Datapool>>().totalElements, 0);
        const pool = await createPool();
        assertProblem(await call('PUT', `/v1/datapools/${pool.id}`, { body: { name: pool.name, description: 'x', contactPersonId: randomUUID() } }), 400, 'VALIDATION_FAILED', 'contactPersonId');
      });

      test('an assignment naming an unknown group or role, or a SYSTEM role: 400, nothing created', async () => {
        const name = unique('unassignable');
        const groupId = await insertGroup();
        const consumer = await roleId('Data Consumer');
        const cases: [Record<string, string>, string][] = [
          [{ groupId: randomUUID(), roleId: consumer }, 'assignments[0].groupId'],
          [{ groupId, roleId: randomUUID() }, 'assignments[0].roleId'],
          [{ groupId, roleId: await roleId('Tenant Administrator') }, 'assignments[0].roleId'],
        ];
        for (const [item, field] of cases) {
          assertProblem(await call('POST', '/v1/datapools', { body: { name, description: 'x', assignments: [item] } }), 400, 'VALIDATION_FAILED', field);
        }
        assert.equal((await call('GET', `/v1/datapools?name=${name}`)).json<Page<Datapool>>().totalElements, 0);
      });

      test('a body that is not JSON, or a malformed path id: 400', async () => {
        assertProblem(await call('GET', '/v1/datapools/not-a-uuid'), 400, 'VALIDATION_FAILED', 'id');
        const malformed = await t.app.inject({
          method: 'POST', url: '/v1/datapools', payload: '{"name": ', headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
        });
        assert.equal(malformed.statusCode, 400);
        assert.equal(malformed.json<Problem>().type, 'urn:platform:error:MALFORMED_REQUEST');
      });

      test('list parameters: unknown sort property, bad size, bad contactPersonId: 400', async () => {
        assertProblem(await call('GET', '/v1/datapools?sort=colour,asc'), 400, 'VALIDATION_FAILED', 'sort');
        assertProblem(await call('GET', '/v1/datapools?size=0'), 400, 'VALIDATION_FAILED', 'size');
        assertProblem(await call('GET', '/v1/datapools?contactPersonId=x'), 400, 'VALIDATION_FAILED', 'contactPersonId');
      });
    });

    describe('conflicts and preconditions', () => {
      test('a name already taken (case-insensitively): 409 on POST, PUT and PATCH', async () => {
        const taken = await createPool({ name: unique('Taken') });
        assertProblem(await call('POST', '/v1/datapools', { body: { name: taken.name.toUpperCase(), description: 'x' } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'name');
        const other = await createPool();
        assertProblem(await call('PUT', `/v1/datapools/${other.id}`, { body: { name: taken.name.toLowerCase(), description: 'x' } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'name');
        assertProblem(await call('PATCH', `/v1/datapools/${other.id}`, { body: { name: taken.name } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'name');
        // Keeping its own name is no conflict.
        assert.equal((await call('PUT', `/v1/datapools/${other.id}`, { body: { name: other.name, description: 'same name' } })).status, 200);
      });

      test('a stale If-Match: 412 on PUT, PATCH and DELETE; the current ETag passes', async () => {
        const pool = await createPool();
        const first = (await call('GET', `/v1/datapools/${pool.id}`)).headers['etag'] as string;
        const changed = await call('PATCH', `/v1/datapools/${pool.id}`, { body: { description: 'changed' }, headers: { 'if-match': first } });
        assert.equal(changed.status, 200, changed.text);
        const current = changed.headers['etag'] as string;
        assert.notEqual(current, first);

        assertProblem(await call('PUT', `/v1/datapools/${pool.id}`, { body: { name: pool.name, description: 'y' }, headers: { 'if-match': first } }), 412, 'PRECONDITION_FAILED');
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { body: { description: 'y' }, headers: { 'if-match': first } }), 412, 'PRECONDITION_FAILED');
        assertProblem(await call('DELETE', `/v1/datapools/${pool.id}`, { headers: { 'if-match': first } }), 412, 'PRECONDITION_FAILED');
        assert.equal((await call('GET', `/v1/datapools/${pool.id}`)).json<Datapool>().description, 'changed');

        const put = await call('PUT', `/v1/datapools/${pool.id}`, { body: { name: pool.name, description: 'y' }, headers: { 'if-match': current } });
        assert.equal(put.status, 200, put.text);
        assert.equal((await call('DELETE', `/v1/datapools/${pool.id}`, { headers: { 'if-match': put.headers['etag'] as string } })).status, 204);
      });
    });

    describe('list', () => {
      let tag: string;
      let pools: Datapool[];
      let contact: string;
      before(async () => {
        tag = unique('listing');
        contact = await insertUser();
        pools = [
          await createPool({ name: `${tag} Bravo`, description: 'Water levels of the river' }),
          await createPool({ name: `${tag} Alpha`, description: 'Air quality', contactPersonId: contact }),
          await createPool({ name: `${tag} Charlie 100%`, description: 'Traffic counters' }),
        ];
      });
      const list = async (query: string) => {
        const response = await call('GET', `/v1/datapools?${query}`);
        assert.equal(response.status, 200, response.text);
        return response.json<Page<Datapool>>();
      };
      const names = (page: Page<Datapool>) => page.content.map((pool) => pool.name);

      test('a Page envelope; default sort createdAt descending', async () => {
        const page = await list(`name=${encodeURIComponent(tag)}`);
        assert.equal(page.totalElements, 3);
        assert.equal(page.numberOfElements, 3);
        assert.equal(page.number, 0);
        assert.equal(page.size, 20);
        assert.deepEqual(page.content.map((pool) => pool.id), [...pools].reverse().map((pool) => pool.id));
        assert.deepEqual(page.content[2], pools[0]);
      });

      test('filters: name, description, q, contactPersonId, id', async () => {
        assert.deepEqual(names(await list(`name=${encodeURIComponent(`${tag} ALPHA`)}`)), [`${tag} Alpha`]);
        assert.deepEqual(names(await list(`name=${encodeURIComponent(tag)}&description=RIVER`)), [`${tag} Bravo`]);
        assert.deepEqual(names(await list(`name=${encodeURIComponent(tag)}&q=quality`)), [`${tag} Alpha`]);
        assert.deepEqual(names(await list(`q=${encodeURIComponent(`${tag} charlie`)}`)), [`${tag} Charlie 100%`]);
        assert.deepEqual(names(await list(`contactPersonId=${contact}`)), [`${tag} Alpha`]);
        assert.deepEqual(names(await list(`id=${pools[0]!.id},${pools[2]!.id}&sort=name,asc`)), [`${tag} Bravo`, `${tag} Charlie 100%`]);
      });

      test('% and _ in a partial match are taken literally', async () => {
        assert.deepEqual(names(await list(`name=${encodeURIComponent(tag)}&q=${encodeURIComponent('100%')}`)), [`${tag} Charlie 100%`]);
        assert.equal((await list(`name=${encodeURIComponent(tag)}&q=${encodeURIComponent('_')}`)).totalElements, 0);
      });

      test('sort by name and description, both directions; paging', async () => {
        const byName = `name=${encodeURIComponent(tag)}`;
        assert.deepEqual(names(await list(`${byName}&sort=name,asc`)), [`${tag} Alpha`, `${tag} Bravo`, `${tag} Charlie 100%`]);
        assert.deepEqual(names(await list(`${byName}&sort=name,desc`)), [`${tag} Charlie 100%`, `${tag} Bravo`, `${tag} Alpha`]);
        assert.deepEqual(names(await list(`${byName}&sort=description,asc`)), [`${tag} Alpha`, `${tag} Charlie 100%`, `${tag} Bravo`]);
        assert.deepEqual(names(await list(`${byName}&sort=createdAt,asc`)), pools.map((pool) => pool.name));
        const second = await list(`${byName}&sort=createdAt,asc&size=2&page=1`);
        assert.deepEqual(names(second), [pools[2]!.name]);
        assert.equal(second.totalElements, 3);
        assert.equal(second.totalPages, 2);
        const beyond = await list(`${byName}&size=2&page=5`);
        assert.equal(beyond.content.length, 0);
        assert.equal(beyond.totalElements, 3);
      });

      test('modifiedAt sorts and filters', async () => {
        const touched = await call('PATCH', `/v1/datapools/${pools[0]!.id}`, { body: { description: 'Water levels of the river, again' } });
        assert.equal(touched.status, 200);
        const page = await list(`name=${encodeURIComponent(tag)}&sort=modifiedAt,desc`);
        assert.equal(page.content[0]!.id, pools[0]!.id);
        const since = touched.json<Datapool>().modifiedAt;
        assert.deepEqual((await list(`name=${encodeURIComponent(tag)}&modifiedAtFrom=${since}`)).content.map((pool) => pool.id), [pools[0]!.id]);
      });
    });

    describe('authorization: datapools are data objects', () => {
      let a: Datapool;
      let b: Datapool;
      before(async () => {
        a = await createPool({ name: unique('pool A') });
        b = await createPool({ name: unique('pool B') });
      });
      const totalForAdmin = async () => (await call('GET', '/v1/datapools?size=1')).json<Page<Datapool>>().totalElements;

      test('no permission at all: an empty list, 404 on reads and writes, 403 on create', async () => {
        const token = await readerWith([]);
        const page = (await call('GET', '/v1/datapools', { token })).json<Page<Datapool>>();
        assert.equal(page.totalElements, 0);
        assert.deepEqual(page.content, []);
        assertProblem(await call('GET', `/v1/datapools/${a.id}`, { token }), 404, 'NOT_FOUND');
        assertProblem(await call('GET', `/v1/datapools/${a.id}/assignments`, { token }), 404, 'NOT_FOUND');
        assertProblem(await call('PATCH', `/v1/datapools/${a.id}`, { token, body: { description: 'x' } }), 404, 'NOT_FOUND');
        assertProblem(await call('DELETE', `/v1/datapools/${a.id}`, { token }), 404, 'NOT_FOUND');
        assertProblem(await call('POST', '/v1/datapools', { token, body: { name: unique('denied'), description: 'x' } }), 403, 'ACCESS_DENIED');
      });

      test('a token of an unknown email holds no permission', async () => {
        const token = await t.tokenFor(`${unique('stranger')}@example.com`);
        assert.equal((await call('GET', '/v1/datapools', { token })).json<Page<Datapool>>().totalElements, 0);
        assertProblem(await call('GET', `/v1/datapools/${a.id}`, { token }), 404, 'NOT_FOUND');
      });

      test('DATAPOOL_READ on A only: sees A alone, cannot change it, B does not exist for them', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_READ'], scopeType: 'DATAPOOL', scopeId: a.id }]);
        const page = (await call('GET', '/v1/datapools', { token })).json<Page<Datapool>>();
        assert.equal(page.totalElements, 1);
        assert.deepEqual(page.content.map((pool) => pool.id), [a.id]);
        const got = await call('GET', `/v1/datapools/${a.id}`, { token });
        assert.equal(got.status, 200);
        assert.equal(got.json<Datapool>().id, a.id);
        assert.ok(got.headers['etag']);
        assert.equal((await call('GET', `/v1/datapools/${a.id.toUpperCase()}`, { token })).status, 200);
        assert.equal((await call('GET', `/v1/datapools/${a.id}/assignments`, { token })).status, 200);
        assertProblem(await call('GET', `/v1/datapools/${b.id}`, { token }), 404, 'NOT_FOUND');
        assertProblem(await call('GET', `/v1/datapools/${b.id}/assignments`, { token }), 404, 'NOT_FOUND');
        assertProblem(await call('PUT', `/v1/datapools/${a.id}`, { token, body: { name: a.name, description: 'x' } }), 403, 'ACCESS_DENIED');
        assertProblem(await call('PATCH', `/v1/datapools/${a.id}`, { token, body: { description: 'x' } }), 403, 'ACCESS_DENIED');
        assertProblem(await call('DELETE', `/v1/datapools/${a.id}`, { token }), 403, 'ACCESS_DENIED');
        assertProblem(await call('PUT', `/v1/datapools/${b.id}`, { token, body: { name: b.name, description: 'x' } }), 404, 'NOT_FOUND');
        assertProblem(await call('POST', '/v1/datapools', { token, body: { name: unique('denied'), description: 'x' } }), 403, 'ACCESS_DENIED');
        assert.equal((await call('GET', `/v1/datapools/${a.id}`)).json<Datapool>().description, a.description);
      });

      test('DATAPOOL_READ and DATAPOOL_WRITE on A: may change A, not B, and may not create', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_READ', 'DATAPOOL_WRITE'], scopeType: 'DATAPOOL', scopeId: a.id }]);
        const patched = await call('PATCH', `/v1/datapools/${a.id}`, { token, body: { description: 'changed by a datapool writer' } });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.json<Datapool>().description, 'changed by a datapool writer');
        assertProblem(await call('PATCH', `/v1/datapools/${b.id}`, { token, body: { description: 'x' } }), 404, 'NOT_FOUND');
        assertProblem(await call('POST', '/v1/datapools', { token, body: { name: unique('denied'), description: 'x' } }), 403, 'ACCESS_DENIED');
      });

      test('any assignment on a datapool reads it (the contract\'s rule), and only it', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_WRITE'], scopeType: 'DATAPOOL', scopeId: a.id }]);
        assert.equal((await call('PATCH', `/v1/datapools/${a.id}`, { token, body: { description: 'written by its writer' } })).status, 200);
        assertProblem(await call('GET', `/v1/datapools/${b.id}`, { token }), 404, 'NOT_FOUND');
        const page = (await call('GET', '/v1/datapools?size=1000', { token })).json<Page<Datapool>>();
        assert.deepEqual(page.content.map((pool) => pool.id), [a.id]);
      });

      test('TENANT DATAPOOL_READ: sees every datapool, writes nothing', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_READ'], scopeType: 'TENANT', scopeId: t.ctx.tenant.id }]);
        const page = (await call('GET', '/v1/datapools?size=1000', { token })).json<Page<Datapool>>();
        assert.equal(page.totalElements, await totalForAdmin());
        assert.ok(page.content.some((pool) => pool.id === a.id) && page.content.some((pool) => pool.id === b.id));
        assert.equal((await call('GET', `/v1/datapools/${b.id}`, { token })).status, 200);
        assertProblem(await call('DELETE', `/v1/datapools/${b.id}`, { token }), 403, 'ACCESS_DENIED');
        assertProblem(await call('POST', '/v1/datapools', { token, body: { name: unique('denied'), description: 'x' } }), 403, 'ACCESS_DENIED');
      });

      test('TENANT DATAPOOL_WRITE with DATAPOOL_READ: may create', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_READ', 'DATAPOOL_WRITE'], scopeType: 'TENANT', scopeId: t.ctx.tenant.id }]);
        assert.equal((await call('POST', '/v1/datapools', { token, body: { name: unique('allowed'), description: 'x' } })).status, 201);
      });

      test('X-Allowed-Scope-Ids: only the listed scopes count; * means no restriction', async () => {
        const token = await readerWith([{ permissions: ['DATAPOOL_READ'], scopeType: 'DATAPOOL', scopeId: a.id }]);
        const onlyB = { 'x-allowed-scope-ids': b.id };
        assert.equal((await call('GET', '/v1/datapools', { token, headers: onlyB })).json<Page<Datapool>>().totalElements, 0);
        assertProblem(await call('GET', `/v1/datapools/${a.id}`, { token, headers: onlyB }), 404, 'NOT_FOUND');
        const any = { 'x-allowed-scope-ids': '*' };
        assert.deepEqual((await call('GET', '/v1/datapools', { token, headers: any })).json<Page<Datapool>>().content.map((pool) => pool.id), [a.id]);
        assert.equal((await call('GET', `/v1/datapools/${a.id}`, { token, headers: any })).status, 200);

        const tenantReader = await readerWith([{ permissions: ['DATAPOOL_READ'], scopeType: 'TENANT', scopeId: t.ctx.tenant.id }]);
        assert.equal((await call('GET', '/v1/datapools', { token: tenantReader, headers: onlyB })).json<Page<Datapool>>().totalElements, 0);
        assert.equal((await call('GET', '/v1/datapools', { token: tenantReader, headers: { 'x-allowed-scope-ids': t.ctx.tenant.id } })).json<Page<Datapool>>().totalElements, await totalForAdmin());
      });
    });

    describe('assignments carried in the body', () => {
      interface Assignment { id: string; scopeType: string; scope: { id: string; name: string }; group: { id: string }; role: { id: string } }
      const assignmentsOf = async (id: string) => {
        const response = await call('GET', `/v1/datapools/${id}/assignments`);
        assert.equal(response.status, 200, response.text);
        const items = response.json<Assignment[]>();
        assert.ok(Array.isArray(items));
        return items;
      };
      const pairs = (items: Assignment[]) => items.map((a) => `${a.group.id}|${a.role.id}`).sort();

      test('create with assignments, replace them with PUT, keep them on PATCH without the field, clear them', async () => {
        const [g1, g2] = [await insertGroup(), await insertGroup()];
        const [owner, consumer] = [await roleId('Data Owner'), await roleId('Data Consumer')];
        const pool = await createPool({ assignments: [{ groupId: g1, roleId: owner }, { groupId: g2, roleId: consumer }] });

        const created = await assignmentsOf(pool.id);
        assert.deepEqual(pairs(created), [`${g1}|${owner}`, `${g2}|${consumer}`].sort());
        for (const assignment of created) {
          assert.equal(assignment.scopeType, 'DATAPOOL');
          assert.deepEqual(assignment.scope, { id: pool.id, name: pool.name });
          assert.match(assignment.id, UUID);
        }

        const put = await call('PUT', `/v1/datapools/${pool.id}`, {
          body: { name: pool.name, description: pool.description, assignments: [{ groupId: g2, roleId: consumer }, { groupId: g1, roleId: consumer }] },
        });
        assert.equal(put.status, 200, put.text);
        const replaced = await assignmentsOf(pool.id);
        assert.deepEqual(pairs(replaced), [`${g2}|${consumer}`, `${g1}|${consumer}`].sort());
        // Replaced by difference: the assignment that stayed keeps its id.
        const kept = created.find((a) => a.group.id === g2)!;
        assert.equal(replaced.find((a) => a.group.id === g2)!.id, kept.id);

        assert.equal((await call('PATCH', `/v1/datapools/${pool.id}`, { body: { description: 'no assignments field' } })).status, 200);
        assert.deepEqual(pairs(await assignmentsOf(pool.id)), pairs(replaced));
        assert.equal((await call('PUT', `/v1/datapools/${pool.id}`, { body: { name: pool.name, description: 'PUT without the field' } })).status, 200);
        assert.deepEqual(pairs(await assignmentsOf(pool.id)), pairs(replaced));

        assert.equal((await call('PATCH', `/v1/datapools/${pool.id}`, { body: { assignments: [] } })).status, 200);
        assert.deepEqual(await assignmentsOf(pool.id), []);
      });

      test('a renamed datapool shows its new name as the assignment scope', async () => {
        const pool = await createPool({ assignments: [{ groupId: await insertGroup(), roleId: await roleId('Data Consumer') }] });
        const name = unique('renamed');
        assert.equal((await call('PATCH', `/v1/datapools/${pool.id}`, { body: { name } })).status, 200);
        assert.equal((await assignmentsOf(pool.id))[0]!.scope.name, name);
      });

      test('deleting the datapool removes its assignments', async () => {
        const pool = await createPool({ assignments: [{ groupId: await insertGroup(), roleId: await roleId('Data Owner') }] });
        const before = (await call('GET', `/v1/assignments?scopeId=${pool.id}`)).json<Page<Assignment>>();
        assert.equal(before.totalElements, 1);
        assert.equal((await call('DELETE', `/v1/datapools/${pool.id}`)).status, 204);
        assert.equal((await call('GET', `/v1/assignments?scopeId=${pool.id}`)).json<Page<Assignment>>().totalElements, 0);
        assertProblem(await call('GET', `/v1/datapools/${pool.id}/assignments`), 404, 'NOT_FOUND');
      });

      test('a DATAPOOL grant made through the body gives the group what its role holds on that datapool', async () => {
        // Data Owner holds no DATAPOOL_READ, but an assignment on the pool lets its holders see the pool (not change it).
        const email = `${unique('owner')}@example.com`;
        const userId = randomUUID();
        const groupId = await insertGroup();
        await t.ctx.db.insertInto('users').values({ id: userId, email, first_name: 'Owner', last_name: 'Test', title: 'OTHER' }).execute();
        await t.ctx.db.insertInto('group_members').values({ group_id: groupId, user_id: userId }).execute();
        const pool = await createPool({ assignments: [{ groupId, roleId: await roleId('Data Owner') }] });
        const token = await t.tokenFor(email);
        assert.equal((await call('GET', `/v1/datapools/${pool.id}`, { token })).status, 200);
        assertProblem(await call('PATCH', `/v1/datapools/${pool.id}`, { token, body: { description: 'x' } }), 403, 'ACCESS_DENIED');
      });
    });

    test('the OpenAPI document lists every datapool operation', async () => {
      const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
      assert.deepEqual(Object.keys(document.paths['/v1/datapools'] ?? {}).sort(), ['get', 'post']);
      assert.deepEqual(Object.keys(document.paths['/v1/datapools/{id}'] ?? {}).sort(), ['delete', 'get', 'patch', 'put']);
      assert.deepEqual(Object.keys(document.paths['/v1/datapools/{id}/assignments'] ?? {}), ['get']);
    });
  });
}
