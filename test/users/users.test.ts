import { scopeColumns } from '../../src/access/scopes.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const USER_KEYS = ['active', 'createdAt', 'datapools', 'email', 'externalId', 'firstName', 'groups', 'id', 'lastName', 'modifiedAt', 'phone', 'title'];
const PAGE_KEYS = ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'pageable', 'size', 'sort', 'totalElements', 'totalPages'];

/** A short tag that keeps each test's names and emails apart from every other test's. */
const tagOf = () => randomUUID().slice(0, 8);

interface User {
  id: string; email: string; firstName: string; lastName: string; phone: string | null; title: string;
  groups: { id: string; name: string; description: string }[]; datapools: { id: string; name: string }[];
  createdAt: string; modifiedAt: string;
}
interface Page<T> {
  content: T[]; empty: boolean; first: boolean; last: boolean; number: number; numberOfElements: number; size: number;
  totalElements: number; totalPages: number;
}

function assertUserShape(user: User) {
  assert.deepEqual(Object.keys(user).sort(), USER_KEYS);
  assert.match(user.id, UUID);
  assert.match(user.createdAt, ISO);
  assert.match(user.modifiedAt, ISO);
  assert.ok(['MR', 'MS', 'OTHER'].includes(user.title));
  assert.ok(Array.isArray(user.groups) && Array.isArray(user.datapools));
}

function assertProblem(response: LightMyRequestResponse, status: number, code: string, field?: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const problem = response.json();
  assert.equal(problem.type, `urn:platform:error:${code}`);
  assert.equal(problem.status, status);
  assert.equal(typeof problem.title, 'string');
  assert.equal(typeof problem.detail, 'string');
  assert.equal(problem.instance, response.raw.req.url?.split('?')[0]);
  if (field !== undefined) {
    assert.ok(
      problem.fieldErrors?.some((error: { field: string }) => error.field === field),
      `expected a field error on "${field}", got ${JSON.stringify(problem.fieldErrors)}`,
    );
  }
  return problem;
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`users (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const api = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, options: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {}) =>
      t.app.inject({
        method,
        url,
        headers: {
          ...(options.token === null ? {} : { authorization: `Bearer ${options.token ?? t.adminToken}` }),
          ...options.headers,
        },
        ...(options.body === undefined ? {} : { payload: options.body as object }),
      });

    async function createUser(input: Record<string, unknown> = {}): Promise<User> {
      const tag = tagOf();
      const response = await api('POST', '/v1/users', { body: { email: `user.${tag}@example.com`, firstName: 'Ann', lastName: `Lee${tag}`, ...input } });
      assert.equal(response.statusCode, 201, response.body);
      return response.json();
    }

    async function insertGroup(name: string, description = `about ${name}`): Promise<string> {
      const id = randomUUID();
      await t.ctx.db.insertInto('groups').values({ id, name, description }).execute();
      return id;
    }

    const list = async (query: string): Promise<Page<User>> => {
      const response = await api('GET', `/v1/users?${query}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };

    describe('create and read', () => {
      test('POST answers 201 with the user, a Location and an ETag; email is stored lower-cased', async () => {
        const tag = tagOf();
        const response = await api('POST', '/v1/users', {
          body: { email: `Mixed.Case.${tag}@Example.COM`, firstName: 'Grace', lastName: 'Hopper', phone: '+49 30 1234', title: 'MS' },
        });
        assert.equal(response.statusCode, 201, response.body);
        assert.match(String(response.headers['content-type']), /^application\/json/);
        const user: User = response.json();
        assertUserShape(user);
        assert.deepEqual({ ...user, id: undefined, createdAt: undefined, modifiedAt: undefined }, {
          id: undefined, createdAt: undefined, modifiedAt: undefined,
          email: `mixed.case.${tag}@example.com`, firstName: 'Grace', lastName: 'Hopper', phone: '+49 30 1234', title: 'MS', groups: [], datapools: [],
          active: true, externalId: null,
        });
        assert.equal(user.createdAt, user.modifiedAt);
        assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/users/${user.id}`);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
      });

      test('POST without phone and title defaults them to null and OTHER', async () => {
        const user = await createUser();
        assert.equal(user.phone, null);
        assert.equal(user.title, 'OTHER');
      });

      test('GET /users/{id} answers the same representation and ETag as the create', async () => {
        const tag = tagOf();
        const createdResponse = await api('POST', '/v1/users', { body: { email: `get.${tag}@example.com`, firstName: 'Get', lastName: 'Me', title: 'MR' } });
        const created: User = createdResponse.json();
        const response = await api('GET', `/v1/users/${created.id}`);
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), created);
        assert.equal(response.headers['etag'], createdResponse.headers['etag']);
      });

      test('GET /users/{id} accepts an upper-case id', async () => {
        const created = await createUser();
        const response = await api('GET', `/v1/users/${created.id.toUpperCase()}`);
        assert.equal(response.statusCode, 200);
        assert.equal(response.json().id, created.id);
      });

      test('GET /users answers a Page of users with the full envelope', async () => {
        const created = await createUser();
        const page = await list(`id=${created.id}`);
        assert.deepEqual(Object.keys(page).sort(), PAGE_KEYS);
        assert.deepEqual(page, {
          content: [created], empty: false, first: true, last: true, number: 0, numberOfElements: 1, size: 20, totalElements: 1, totalPages: 1,
          sort: { empty: false, sorted: true, unsorted: false },
          pageable: { offset: 0, pageNumber: 0, pageSize: 20, paged: true, unpaged: false, sort: { empty: false, sorted: true, unsorted: false } },
        });
      });

      test('the bootstrap administrator is a user, member of Administrators', async () => {
        const page = await list('email=admin@example.com');
        assert.equal(page.totalElements, 1);
        const [admin] = page.content;
        assertUserShape(admin!);
        assert.deepEqual(admin!.groups.map((group) => group.name), ['Administrators']);
        assert.deepEqual(admin!.datapools, []);
      });
    });

    describe('update and delete', () => {
      test('PUT replaces every field; omitted optional fields take their defaults', async () => {
        const created = await createUser({ phone: '123', title: 'MS' });
        const tag = tagOf();
        const response = await api('PUT', `/v1/users/${created.id}`, { body: { email: `REPLACED.${tag}@example.com`, firstName: 'New', lastName: 'Name' } });
        assert.equal(response.statusCode, 200, response.body);
        const user: User = response.json();
        assertUserShape(user);
        assert.deepEqual({ ...user, modifiedAt: undefined }, {
          ...created, modifiedAt: undefined, email: `replaced.${tag}@example.com`, firstName: 'New', lastName: 'Name', phone: null, title: 'OTHER',
        });
        assert.ok(user.modifiedAt > created.modifiedAt);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        assert.notEqual(response.headers['etag'], undefined);
        assert.deepEqual((await api('GET', `/v1/users/${created.id}`)).json(), user);
      });

      test('PATCH changes only the given fields', async () => {
        const created = await createUser({ phone: '555', title: 'MR' });
        const response = await api('PATCH', `/v1/users/${created.id}`, { body: { firstName: 'Patched' } });
        assert.equal(response.statusCode, 200, response.body);
        const user: User = response.json();
        assertUserShape(user);
        assert.deepEqual({ ...user, modifiedAt: undefined }, { ...created, modifiedAt: undefined, firstName: 'Patched' });
        assert.ok(user.modifiedAt > created.modifiedAt);

        const cleared = await api('PATCH', `/v1/users/${created.id}`, { body: { phone: null, title: 'MS', email: created.email.toUpperCase() } });
        assert.equal(cleared.statusCode, 200, cleared.body);
        assert.deepEqual({ ...cleared.json<User>(), modifiedAt: undefined }, { ...user, modifiedAt: undefined, phone: null, title: 'MS' });
      });

      test('PATCH with an empty body changes nothing visible but answers the user', async () => {
        const created = await createUser();
        const response = await api('PATCH', `/v1/users/${created.id}`, { body: {} });
        assert.equal(response.statusCode, 200);
        assert.deepEqual({ ...response.json<User>(), modifiedAt: undefined }, { ...created, modifiedAt: undefined });
      });

      test('PUT keeping the own email (in another case) is not a conflict', async () => {
        const created = await createUser();
        const response = await api('PUT', `/v1/users/${created.id}`, { body: { email: created.email.toUpperCase(), firstName: 'Same', lastName: 'Mail' } });
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json().email, created.email);
      });

      test('DELETE answers 204; memberships go, groups and datapools naming the user as contact stay without contact', async () => {
        const user = await createUser();
        const tag = tagOf();
        const groupId = await insertGroup(`contact-group-${tag}`);
        await t.ctx.db.updateTable('groups').set({ contact_user_id: user.id }).where('id', '=', groupId).execute();
        const datapoolId = randomUUID();
        await t.ctx.db.insertInto('datapools').values({ id: datapoolId, name: `pool-${tag}`, description: 'pool', contact_person_id: user.id }).execute();
        assert.equal((await api('PUT', `/v1/users/${user.id}/groups`, { body: [groupId] })).statusCode, 200);

        const response = await api('DELETE', `/v1/users/${user.id}`);
        assert.equal(response.statusCode, 204);
        assert.equal(response.body, '');
        assertProblem(await api('GET', `/v1/users/${user.id}`), 404, 'NOT_FOUND');

        const group = await t.ctx.db.selectFrom('groups').selectAll().where('id', '=', groupId).executeTakeFirst();
        assert.equal(group?.contact_user_id, null);
        const datapool = await t.ctx.db.selectFrom('datapools').selectAll().where('id', '=', datapoolId).executeTakeFirst();
        assert.equal(datapool?.contact_person_id, null);
        const memberships = await t.ctx.db.selectFrom('group_members').selectAll().where('user_id', '=', user.id).execute();
        assert.deepEqual(memberships, []);
      });
    });

    describe('validation (400 VALIDATION_FAILED naming the field)', () => {
      const valid = () => ({ email: `valid.${tagOf()}@example.com`, firstName: 'Val', lastName: 'Id' });
      const bodyCases: [string, (body: Record<string, unknown>) => Record<string, unknown>, string][] = [
        ['missing email', ({ email: _email, ...rest }) => rest, 'email'],
        ['bad email', (body) => ({ ...body, email: 'not-an-email' }), 'email'],
        ['empty email', (body) => ({ ...body, email: '' }), 'email'],
        ['email over 255 characters', (body) => ({ ...body, email: `${'a'.repeat(250)}@example.com` }), 'email'],
        ['missing firstName', ({ firstName: _firstName, ...rest }) => rest, 'firstName'],
        ['empty firstName', (body) => ({ ...body, firstName: '' }), 'firstName'],
        ['blank lastName', (body) => ({ ...body, lastName: '   ' }), 'lastName'],
        ['firstName over 255 characters', (body) => ({ ...body, firstName: 'x'.repeat(256) }), 'firstName'],
        ['firstName of the wrong type', (body) => ({ ...body, firstName: 5 }), 'firstName'],
        ['phone over 64 characters', (body) => ({ ...body, phone: '1'.repeat(65) }), 'phone'],
        ['phone of the wrong type', (body) => ({ ...body, phone: 12345 }), 'phone'],
        ['bad title', (body) => ({ ...body, title: 'DR' }), 'title'],
        ['unknown field', (body) => ({ ...body, nickname: 'x' }), 'nickname'],
        ['read-only field id', (body) => ({ ...body, id: randomUUID() }), 'id'],
      ];
      for (const [name, change, field] of bodyCases) {
        test(`POST: ${name}`, async () => {
          assertProblem(await api('POST', '/v1/users', { body: change(valid()) }), 400, 'VALIDATION_FAILED', field);
        });
      }
      for (const [name, change, field] of bodyCases) {
        test(`PUT: ${name}`, async () => {
          const user = await createUser();
          assertProblem(await api('PUT', `/v1/users/${user.id}`, { body: change(valid()) }), 400, 'VALIDATION_FAILED', field);
        });
      }

      test('PATCH validates the fields it is given', async () => {
        const user = await createUser();
        for (const [body, field] of [
          [{ email: 'nope' }, 'email'], [{ firstName: '' }, 'firstName'], [{ lastName: 5 }, 'lastName'],
          [{ title: 'SIR' }, 'title'], [{ unknown: true }, 'unknown'], [{ phone: 'p'.repeat(65) }, 'phone'],
        ] as const) {
          assertProblem(await api('PATCH', `/v1/users/${user.id}`, { body }), 400, 'VALIDATION_FAILED', field);
        }
        assert.deepEqual((await api('GET', `/v1/users/${user.id}`)).json(), user);
      });

      test('a body that is not a JSON object', async () => {
        assertProblem(await api('POST', '/v1/users', { body: ['x'] }), 400, 'VALIDATION_FAILED');
        const malformed = await t.app.inject({
          method: 'POST', url: '/v1/users', payload: '{"email":', headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
        });
        assertProblem(malformed, 400, 'MALFORMED_REQUEST');
      });

      test('a malformed uuid in the path', async () => {
        for (const method of ['GET', 'PUT', 'PATCH', 'DELETE'] as const) {
          const body = method === 'PUT' ? valid() : method === 'PATCH' ? {} : undefined;
          assertProblem(await api(method, '/v1/users/not-a-uuid', { body }), 400, 'VALIDATION_FAILED', 'id');
        }
        assertProblem(await api('PUT', '/v1/users/not-a-uuid/groups', { body: [] }), 400, 'VALIDATION_FAILED', 'userId');
      });

      const queryCases: [string, string][] = [
        ['size=0', 'size'], ['size=1001', 'size'], ['page=-1', 'page'], ['page=x', 'page'],
        ['sort=shoeSize,asc', 'sort'], ['sort=email,sideways', 'sort'], ['sort=phone', 'sort'],
        ['id=not-a-uuid', 'id'], ['createdAtFrom=yesterday', 'createdAtFrom'], ['modifiedAtTo=2024-13-45', 'modifiedAtTo'],
      ];
      for (const [query, field] of queryCases) {
        test(`GET /users?${query}`, async () => {
          assertProblem(await api('GET', `/v1/users?${query}`), 400, 'VALIDATION_FAILED', field);
        });
      }

      test('size=1000 and page far past the end are accepted', async () => {
        assert.equal((await api('GET', '/v1/users?size=1000')).statusCode, 200);
        const page = await list('page=100000&size=1');
        assert.equal(page.empty, true);
        assert.ok(page.totalElements >= 1);
      });
    });

    describe('authentication and permissions', () => {
      const operations = (id: string): [string, 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', string, unknown][] => [
        ['list', 'GET', '/v1/users', undefined],
        ['get', 'GET', `/v1/users/${id}`, undefined],
        ['create', 'POST', '/v1/users', { email: `denied.${tagOf()}@example.com`, firstName: 'No', lastName: 'Way' }],
        ['replace', 'PUT', `/v1/users/${id}`, { email: `denied.${tagOf()}@example.com`, firstName: 'No', lastName: 'Way' }],
        ['patch', 'PATCH', `/v1/users/${id}`, { firstName: 'No' }],
        ['replace groups', 'PUT', `/v1/users/${id}/groups`, []],
        ['delete', 'DELETE', `/v1/users/${id}`, undefined],
      ];

      test('no token: 401 with an HTML body', async () => {
        const user = await createUser();
        for (const [name, method, url, body] of operations(user.id)) {
          const response = await api(method, url, { token: null, body });
          assert.equal(response.statusCode, 401, name);
          assert.match(String(response.headers['content-type']), /^text\/html/, name);
        }
        const me = await api('GET', '/v1/users/me', { token: null });
        assert.equal(me.statusCode, 401);
      });

      test('a user of the service in no group: 403 ACCESS_DENIED on every operation, nothing changes', async () => {
        const caller = await createUser();
        const target = await createUser();
        const token = await t.tokenFor(caller.email);
        for (const [name, method, url, body] of operations(target.id)) {
          const problem = assertProblem(await api(method, url, { token, body }), 403, 'ACCESS_DENIED');
          assert.match(problem.detail, /USER_(READ|WRITE)/, name);
        }
        assert.deepEqual((await api('GET', `/v1/users/${target.id}`)).json(), target);
      });

      test('an email unknown to the service: 403 ACCESS_DENIED on every operation', async () => {
        const token = await t.tokenFor(`stranger.${tagOf()}@example.com`);
        const target = await createUser();
        for (const [, method, url, body] of operations(target.id)) {
          assertProblem(await api(method, url, { token, body }), 403, 'ACCESS_DENIED');
        }
      });

      test('USER_READ without USER_WRITE: reads pass, writes answer 403', async () => {
        const tag = tagOf();
        const caller = await createUser();
        const roleId = randomUUID();
        await t.ctx.db.insertInto('roles').values({ id: roleId, name: `user-reader-${tag}`, description: '', role_type: 'SYSTEM' }).execute();
        const permission = await t.ctx.db.selectFrom('permissions').select('id').where('name', '=', 'USER_READ').executeTakeFirstOrThrow();
        await t.ctx.db.insertInto('role_permissions').values({ role_id: roleId, permission_id: permission.id }).execute();
        const groupId = await insertGroup(`readers-${tag}`);
        await t.ctx.db.insertInto('group_members').values({ group_id: groupId, user_id: caller.id }).execute();
        await t.ctx.db.insertInto('assignments').values({ id: randomUUID(), group_id: groupId, role_id: roleId, ...scopeColumns('TENANT', t.ctx.tenant.id) }).execute();
        const token = await t.tokenFor(caller.email);

        assert.equal((await api('GET', `/v1/users?id=${caller.id}`, { token })).statusCode, 200);
        assert.equal((await api('GET', `/v1/users/${caller.id}`, { token })).statusCode, 200);
        for (const [, method, url, body] of operations(caller.id).slice(2)) {
          assertProblem(await api(method, url, { token, body }), 403, 'ACCESS_DENIED');
        }
        // The same role on a datapool scope does not count for users: they are tenant-level.
        const poolReader = await createUser();
        const poolGroup = await insertGroup(`pool-readers-${tag}`);
        await t.ctx.db.insertInto('group_members').values({ group_id: poolGroup, user_id: poolReader.id }).execute();
        const pool = randomUUID();
        await t.ctx.db.insertInto('datapools').values({ id: pool, name: `pool-${tag}`, description: 'a pool' }).execute();
        await t.ctx.db.insertInto('assignments').values({ id: randomUUID(), group_id: poolGroup, role_id: roleId, ...scopeColumns('DATAPOOL', pool) }).execute();
        const poolToken = await t.tokenFor(poolReader.email);
        assertProblem(await api('GET', '/v1/users', { token: poolToken }), 403, 'ACCESS_DENIED');
        assertProblem(await api('GET', `/v1/users/${poolReader.id}`, { token: poolToken }), 403, 'ACCESS_DENIED');
      });
    });

    describe('404, 409, 412', () => {
      test('an unknown id answers 404 NOT_FOUND on every operation', async () => {
        const id = randomUUID();
        assertProblem(await api('GET', `/v1/users/${id}`), 404, 'NOT_FOUND');
        assertProblem(await api('PUT', `/v1/users/${id}`, { body: { email: `ghost.${tagOf()}@example.com`, firstName: 'G', lastName: 'H' } }), 404, 'NOT_FOUND');
        assertProblem(await api('PATCH', `/v1/users/${id}`, { body: { firstName: 'G' } }), 404, 'NOT_FOUND');
        assertProblem(await api('PUT', `/v1/users/${id}/groups`, { body: [] }), 404, 'NOT_FOUND');
        assertProblem(await api('DELETE', `/v1/users/${id}`), 404, 'NOT_FOUND');
      });

      test('a duplicate email, in any case, answers 409 UNIQUE_CONSTRAINT_VIOLATION', async () => {
        const first = await createUser();
        const shouted = first.email.toUpperCase();
        assertProblem(await api('POST', '/v1/users', { body: { email: shouted, firstName: 'Dup', lastName: 'Licate' } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'email');
        assertProblem(await api('POST', '/v1/users', { body: { email: first.email, firstName: 'Dup', lastName: 'Licate' } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'email');

        const second = await createUser();
        assertProblem(await api('PUT', `/v1/users/${second.id}`, { body: { email: shouted, firstName: 'Dup', lastName: 'Licate' } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'email');
        assertProblem(await api('PATCH', `/v1/users/${second.id}`, { body: { email: shouted } }), 409, 'UNIQUE_CONSTRAINT_VIOLATION', 'email');
        assert.deepEqual((await api('GET', `/v1/users/${second.id}`)).json(), second);
        assert.equal((await list(`email=${encodeURIComponent(first.email)}`)).totalElements, 1);
      });

      test('a stale If-Match answers 412 on PUT, PATCH, PUT groups and DELETE; the current ETag succeeds', async () => {
        const user = await createUser();
        const staleEtag = (await api('GET', `/v1/users/${user.id}`)).headers['etag'] as string;
        const patched = await api('PATCH', `/v1/users/${user.id}`, { body: { lastName: 'Changed' }, headers: { 'if-match': staleEtag } });
        assert.equal(patched.statusCode, 200, patched.body);
        const currentEtag = patched.headers['etag'] as string;
        assert.notEqual(currentEtag, staleEtag);

        const replacement = { email: user.email, firstName: 'Re', lastName: 'Placed' };
        assertProblem(await api('PUT', `/v1/users/${user.id}`, { body: replacement, headers: { 'if-match': staleEtag } }), 412, 'PRECONDITION_FAILED');
        assertProblem(await api('PATCH', `/v1/users/${user.id}`, { body: { firstName: 'X' }, headers: { 'if-match': staleEtag } }), 412, 'PRECONDITION_FAILED');
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: [], headers: { 'if-match': staleEtag } }), 412, 'PRECONDITION_FAILED');
        assertProblem(await api('DELETE', `/v1/users/${user.id}`, { headers: { 'if-match': staleEtag } }), 412, 'PRECONDITION_FAILED');
        assert.equal((await api('GET', `/v1/users/${user.id}`)).json().lastName, 'Changed');

        const replaced = await api('PUT', `/v1/users/${user.id}`, { body: replacement, headers: { 'if-match': currentEtag } });
        assert.equal(replaced.statusCode, 200, replaced.body);
        const afterPut = replaced.headers['etag'] as string;
        const grouped = await api('PUT', `/v1/users/${user.id}/groups`, { body: [], headers: { 'if-match': afterPut } });
        assert.equal(grouped.statusCode, 200, grouped.body);
        const deleted = await api('DELETE', `/v1/users/${user.id}`, { headers: { 'if-match': grouped.headers['etag'] as string } });
        assert.equal(deleted.statusCode, 204);
      });

      test('If-Match: * matches any existing user', async () => {
        const user = await createUser();
        const response = await api('PATCH', `/v1/users/${user.id}`, { body: { title: 'MR' }, headers: { 'if-match': '*' } });
        assert.equal(response.statusCode, 200);
        assert.equal(response.json().title, 'MR');
      });
    });

    describe('filters and sorting', () => {
      test('firstName and lastName are partial, case-insensitive, with % and _ taken literally', async () => {
        const tag = tagOf();
        const literal = await createUser({ firstName: `50%_off${tag}`, lastName: `Under_score${tag}` });
        const lookalike = await createUser({ firstName: `50xxoff${tag}`, lastName: `UnderXscore${tag}` });

        const byFirst = await list(`firstName=${encodeURIComponent(`%_OFF${tag}`)}`);
        assert.deepEqual(byFirst.content.map((user) => user.id), [literal.id]);
        const both = await list(`firstName=${encodeURIComponent(`off${tag.toUpperCase()}`)}`);
        assert.deepEqual(both.content.map((user) => user.id).sort(), [literal.id, lookalike.id].sort());
        const byLast = await list(`lastName=${encodeURIComponent(`r_score${tag}`)}`);
        assert.deepEqual(byLast.content.map((user) => user.id), [literal.id]);
        assert.equal((await list(`lastName=${encodeURIComponent(`%${tag}%`)}`)).totalElements, 0);
      });

      test('email is an exact, case-insensitive match', async () => {
        const user = await createUser();
        const exact = await list(`email=${encodeURIComponent(user.email.toUpperCase())}`);
        assert.deepEqual(exact.content.map((u) => u.id), [user.id]);
        assert.equal((await list(`email=${encodeURIComponent(user.email.slice(1))}`)).totalElements, 0);
        assert.equal((await list(`email=${encodeURIComponent(user.email.slice(0, -1))}`)).totalElements, 0);
      });

      test('q matches partially in "firstName lastName" or in the email', async () => {
        const tag = tagOf();
        const ada = await createUser({ email: `countess.${tag}@example.com`, firstName: `Ada${tag}`, lastName: `Lovelace${tag}` });
        const other = await createUser({ email: `other.${tag}@example.com`, firstName: `Charles${tag}`, lastName: 'Babbage' });
        assert.deepEqual((await list(`q=${encodeURIComponent(`${tag} LOVELACE${tag}`)}`)).content.map((u) => u.id), [ada.id]);
        assert.deepEqual((await list(`q=${encodeURIComponent(`countess.${tag}`)}`)).content.map((u) => u.id), [ada.id]);
        assert.deepEqual((await list(`q=${tag}&sort=email,asc`)).content.map((u) => u.id), [ada.id, other.id]);
        assert.equal((await list(`q=${encodeURIComponent(`Ada${tag}Lovelace`)}`)).totalElements, 0);
      });

      test('id takes one or more ids, comma-separated or repeated', async () => {
        const [a, b, c] = [await createUser(), await createUser(), await createUser()];
        assert.deepEqual((await list(`id=${a.id},${b.id}&sort=createdAt,asc`)).content.map((u) => u.id), [a.id, b.id]);
        assert.deepEqual((await list(`id=${a.id}&id=${c.id.toUpperCase()}&sort=createdAt,asc`)).content.map((u) => u.id), [a.id, c.id]);
        assert.equal((await list(`id=${randomUUID()}`)).totalElements, 0);
      });

      test('createdAtFrom and createdAtTo are inclusive bounds', async () => {
        const tag = tagOf();
        const lastName = `Dated${tag}`;
        const dates = ['2001-01-01T00:00:00.000Z', '2002-01-01T00:00:00.000Z', '2003-01-01T00:00:00.000Z'];
        const ids = dates.map(() => randomUUID());
        await t.ctx.db.insertInto('users').values(dates.map((date, i) => ({
          id: ids[i]!, email: `dated${i}.${tag}@example.com`, first_name: 'D', last_name: lastName, title: 'OTHER' as const, created_at: date, modified_at: date,
        }))).execute();
        const idsOf = async (query: string) => (await list(`lastName=${lastName}&sort=createdAt,asc&${query}`)).content.map((u) => u.id);
        assert.deepEqual(await idsOf(`createdAtFrom=${dates[1]}`), [ids[1], ids[2]]);
        assert.deepEqual(await idsOf(`createdAtTo=${dates[1]}`), [ids[0], ids[1]]);
        assert.deepEqual(await idsOf(`createdAtFrom=${dates[1]}&createdAtTo=${dates[1]}`), [ids[1]]);
        assert.deepEqual(await idsOf(`modifiedAtFrom=${encodeURIComponent('2002-06-01T00:00:00+02:00')}`), [ids[2]]);
        const [oldest] = (await list(`id=${ids[0]}`)).content;
        assert.equal(oldest!.createdAt, dates[0]);
      });

      test('sorts by email, firstName, title in either direction; default is createdAt,desc', async () => {
        const tag = tagOf();
        const lastName = `Sorted${tag}`;
        const b = await createUser({ email: `b.${tag}@example.com`, firstName: 'Zed', lastName, title: 'MS' });
        const a = await createUser({ email: `a.${tag}@example.com`, firstName: 'Yan', lastName, title: 'OTHER' });
        const c = await createUser({ email: `c.${tag}@example.com`, firstName: 'Xia', lastName, title: 'MR' });
        const idsOf = async (sort: string) => (await list(`lastName=${lastName}${sort}`)).content.map((u) => u.id);
        assert.deepEqual(await idsOf(''), [c.id, a.id, b.id]);
        assert.deepEqual(await idsOf('&sort=email'), [a.id, b.id, c.id]);
        assert.deepEqual(await idsOf('&sort=email,DESC'), [c.id, b.id, a.id]);
        assert.deepEqual(await idsOf('&sort=firstName,asc'), [c.id, a.id, b.id]);
        assert.deepEqual(await idsOf('&sort=title,asc'), [c.id, b.id, a.id]);
        assert.deepEqual(await idsOf('&sort=lastName,asc&sort=modifiedAt,desc'), [c.id, a.id, b.id]);
      });

      test('pagination over users created in one go walks every user exactly once', async () => {
        const tag = tagOf();
        const lastName = `Paged${tag}`;
        const count = 26;
        const ids = Array.from({ length: count }, () => randomUUID());
        // One statement: every row gets the same created_at, so only the id breaks ties.
        await t.ctx.db.insertInto('users').values(ids.map((id, i) => ({
          id, email: `paged${i}.${tag}@example.com`, first_name: `P${i}`, last_name: lastName, title: 'OTHER' as const,
        }))).execute();

        const seen: string[] = [];
        const size = 7;
        const totalPages = Math.ceil(count / size);
        for (let number = 0; number < totalPages; number++) {
          const page = await list(`lastName=${lastName}&sort=lastName,asc&size=${size}&page=${number}`);
          assert.equal(page.totalElements, count);
          assert.equal(page.totalPages, totalPages);
          assert.equal(page.number, number);
          assert.equal(page.size, size);
          assert.equal(page.first, number === 0);
          assert.equal(page.last, number === totalPages - 1);
          assert.equal(page.numberOfElements, number === totalPages - 1 ? count - size * (totalPages - 1) : size);
          assert.equal(page.content.length, page.numberOfElements);
          assert.equal(page.empty, false);
          page.content.forEach(assertUserShape);
          seen.push(...page.content.map((user) => user.id));
        }
        assert.equal(seen.length, count);
        assert.deepEqual([...seen].sort(), [...ids].sort());

        const past = await list(`lastName=${lastName}&sort=lastName,asc&size=${size}&page=${totalPages}`);
        assert.deepEqual({ ...past, sort: undefined, pageable: undefined }, {
          content: [], empty: true, first: false, last: true, number: totalPages, numberOfElements: 0, size, totalElements: count, totalPages,
          sort: undefined, pageable: undefined,
        });
      });
    });

    describe('PUT /users/{userId}/groups', () => {
      test('replaces the memberships; groups are ordered by name; changed groups and the user are touched', async () => {
        const tag = tagOf();
        const user = await createUser();
        const zulu = await insertGroup(`zulu-${tag}`);
        const alpha = await insertGroup(`alpha-${tag}`);
        const mike = await insertGroup(`mike-${tag}`, '');
        const modifiedOf = async (id: string) =>
          (await t.ctx.db.selectFrom('groups').select('modified_at').where('id', '=', id).executeTakeFirstOrThrow()).modified_at.getTime();

        const first = await api('PUT', `/v1/users/${user.id}/groups`, { body: [zulu, alpha] });
        assert.equal(first.statusCode, 200, first.body);
        assert.match(String(first.headers['etag']), /^"[^"]+"$/);
        const afterFirst: User = first.json();
        assertUserShape(afterFirst);
        assert.deepEqual(afterFirst.groups, [
          { id: alpha, name: `alpha-${tag}`, description: `about alpha-${tag}` },
          { id: zulu, name: `zulu-${tag}`, description: `about zulu-${tag}` },
        ]);
        assert.ok(afterFirst.modifiedAt > user.modifiedAt);
        assert.deepEqual((await api('GET', `/v1/users/${user.id}`)).json(), afterFirst);

        const [zuluBefore, alphaBefore, mikeBefore] = [await modifiedOf(zulu), await modifiedOf(alpha), await modifiedOf(mike)];
        const second = await api('PUT', `/v1/users/${user.id}/groups`, { body: [mike, alpha.toUpperCase()] });
        assert.equal(second.statusCode, 200, second.body);
        const afterSecond: User = second.json();
        assert.deepEqual(afterSecond.groups, [
          { id: alpha, name: `alpha-${tag}`, description: `about alpha-${tag}` },
          { id: mike, name: `mike-${tag}`, description: '' },
        ]);
        assert.ok(afterSecond.modifiedAt > afterFirst.modifiedAt);
        assert.ok((await modifiedOf(zulu)) > zuluBefore, 'the group the user left is touched');
        assert.ok((await modifiedOf(mike)) > mikeBefore, 'the group the user joined is touched');
        assert.equal(await modifiedOf(alpha), alphaBefore, 'an unchanged membership leaves its group alone');

        const same = await api('PUT', `/v1/users/${user.id}/groups`, { body: [alpha, mike] });
        assert.equal(same.statusCode, 200);
        assert.equal(same.json().modifiedAt, afterSecond.modifiedAt, 'no change, no touch');

        const emptied = await api('PUT', `/v1/users/${user.id}/groups`, { body: [] });
        assert.equal(emptied.statusCode, 200);
        assert.deepEqual(emptied.json().groups, []);
      });

      test('an unknown group id answers 400 naming the item, and nothing changes', async () => {
        const tag = tagOf();
        const user = await createUser();
        const one = await insertGroup(`one-${tag}`);
        const two = await insertGroup(`two-${tag}`);
        const kept = await api('PUT', `/v1/users/${user.id}/groups`, { body: [one] });
        const problem = assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: [two, one, randomUUID()] }), 400, 'VALIDATION_FAILED', '[2]');
        assert.equal(problem.fieldErrors.length, 1);
        assert.deepEqual((await api('GET', `/v1/users/${user.id}`)).json(), kept.json());
      });

      test('a body that is not an array of distinct uuids answers 400', async () => {
        const user = await createUser();
        const id = randomUUID();
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: { groupIds: [id] } }), 400, 'VALIDATION_FAILED');
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: [id, 'nope'] }), 400, 'VALIDATION_FAILED', '[1]');
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: [id, id] }), 400, 'VALIDATION_FAILED');
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: [id, id.toUpperCase()] }), 400, 'VALIDATION_FAILED');
        assertProblem(await api('PUT', `/v1/users/${user.id}/groups`, { body: Array.from({ length: 1001 }, () => randomUUID()) }), 400, 'VALIDATION_FAILED');
      });

      test("datapools lists, once and by name, the datapools on which the user's groups hold assignments", async () => {
        const tag = tagOf();
        const user = await createUser();
        const [g1, g2, g3] = [await insertGroup(`dp-a-${tag}`), await insertGroup(`dp-b-${tag}`), await insertGroup(`dp-c-${tag}`)];
        const [pool1, pool2, pool3] = [randomUUID(), randomUUID(), randomUUID()];
        await t.ctx.db.insertInto('datapools').values([
          { id: pool1, name: `pool-z-${tag}`, description: 'z' },
          { id: pool2, name: `pool-a-${tag}`, description: 'a' },
          { id: pool3, name: `pool-m-${tag}`, description: 'm' },
        ]).execute();
        const roles = await t.ctx.db.selectFrom('roles').select(['id', 'name']).where('name', 'in', ['Data Consumer', 'Data Owner']).execute();
        const consumer = roles.find((role) => role.name === 'Data Consumer')!.id;
        const owner = roles.find((role) => role.name === 'Data Owner')!.id;
        const assign = (groupId: string, roleId: string, scopeType: 'DATAPOOL', scopeId: string) =>
          ({ id: randomUUID(), group_id: groupId, role_id: roleId, ...scopeColumns(scopeType, scopeId) });
        await t.ctx.db.insertInto('assignments').values([
          assign(g1, consumer, 'DATAPOOL', pool1),
          assign(g1, owner, 'DATAPOOL', pool1),
          assign(g2, consumer, 'DATAPOOL', pool1),
          assign(g2, consumer, 'DATAPOOL', pool2),
          assign(g3, consumer, 'DATAPOOL', pool3),
        ]).execute();

        const response = await api('PUT', `/v1/users/${user.id}/groups`, { body: [g1, g2] });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json().datapools, [{ id: pool2, name: `pool-a-${tag}` }, { id: pool1, name: `pool-z-${tag}` }]);
        const listed = await list(`id=${user.id}`);
        assert.deepEqual(listed.content[0]!.datapools, response.json().datapools);
      });
    });
  });
}
