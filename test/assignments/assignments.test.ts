import { scopeColumns } from '../../src/access/scopes.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  administratorsGroup, bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem,
  grant, permissionIds, seededRole, uniqueEmail, uniqueName,
} from '../helpers/factories.js';
import { raceInDatabase } from '../helpers/race.js';

/** /v1/assignments: create with scope resolution, get, delete with the last-administrator guard, list filters, paging. */

const ASSIGNMENT_KEYS = ['createdAt', 'group', 'id', 'modifiedAt', 'role', 'scope', 'scopeType'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Json = Record<string, any>;
const ascending = (values: string[]) => [...values].sort();

for (const kind of databaseKinds(import.meta.url)) {
  describe(`assignments (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const request = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}, token?: string) =>
      t.app.inject({ method, url, headers: { ...bearer(token ?? t.adminToken), ...headers }, ...(payload === undefined ? {} : { payload: payload as any }) });
    const list = async (query: string) => {
      const response = await request('GET', `/v1/assignments${query}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const ids = async (query: string) => (await list(query)).content.map((a: Json) => a.id);
    const dataRole = async (fields: Json = {}) => createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']), ...fields });
    const systemRole = async () => createRole(t, { roleType: 'SYSTEM', permissionIds: await permissionIds(t, ['USER_READ']) });

    describe('create', () => {
      it('at TENANT scope with scopeId omitted: scope is the tenant, named "default"', async () => {
        const group = await createGroup(t, { description: 'group text' });
        const role = await dataRole({ description: 'role text' });
        const response = await request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id, scopeType: 'TENANT' });
        assert.equal(response.statusCode, 201, response.body);
        const assignment = response.json();
        assert.match(assignment.id, UUID);
        assert.equal(response.headers['location'], `http://localhost:8080/v1/assignments/${assignment.id}`);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        assert.deepEqual(Object.keys(assignment).sort(), ASSIGNMENT_KEYS);
        assert.equal(assignment.scopeType, 'TENANT');
        assert.deepEqual(assignment.scope, { id: t.ctx.tenant.id, name: 'default' });
        assert.deepEqual(assignment.group, { id: group.id, name: group.name, description: 'group text' });
        assert.deepEqual(assignment.role, { id: role.id, name: role.name, description: 'role text', readonly: false, roleType: 'DATA' });
        assert.ok(!Number.isNaN(Date.parse(assignment.createdAt)));
        assert.ok(!Number.isNaN(Date.parse(assignment.modifiedAt)));

        const fetched = await request('GET', `/v1/assignments/${assignment.id}`);
        assert.equal(fetched.statusCode, 200);
        assert.deepEqual(fetched.json(), assignment);
        assert.equal(fetched.headers['etag'], response.headers['etag']);
      });

      it('without scopeType nor scopeId is a TENANT assignment; scopeType TENANT with the tenant id too', async () => {
        const group = await createGroup(t);
        const [r1, r2] = [await dataRole(), await dataRole()];
        const implicit = await createAssignment(t, { groupId: group.id, roleId: r1.id });
        assert.equal(implicit.scopeType, 'TENANT');
        assert.equal(implicit.scope.id, t.ctx.tenant.id);
        const explicit = await createAssignment(t, { groupId: group.id, roleId: r2.id, scopeType: 'TENANT', scopeId: t.ctx.tenant.id });
        assert.equal(explicit.scope.id, t.ctx.tenant.id);
      });

      it('with a datapool id and no scopeType: scopeType DATAPOOL is inferred', async () => {
        const group = await createGroup(t);
        const role = await dataRole();
        const pool = await createDatapool(t);
        const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id, scopeId: pool.id });
        assert.equal(assignment.scopeType, 'DATAPOOL');
        assert.deepEqual(assignment.scope, { id: pool.id, name: pool.name });
        const explicit = await createAssignment(t, { groupId: group.id, roleId: (await dataRole()).id, scopeType: 'DATAPOOL', scopeId: pool.id });
        assert.equal(explicit.scopeType, 'DATAPOOL');
      });

      it('answers 400 naming the field for an unknown or missing scope, group or role, and creates nothing', async () => {
        const group = await createGroup(t);
        const role = await dataRole();
        const system = await systemRole();
        const pool = await createDatapool(t);
        const cases: [Json, string][] = [
          [{ groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: randomUUID() }, 'scopeId'],
          [{ groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL' }, 'scopeId'],
          [{ groupId: group.id, roleId: role.id, scopeId: randomUUID() }, 'scopeId'],
          [{ groupId: group.id, roleId: role.id, scopeType: 'TENANT', scopeId: pool.id }, 'scopeId'],
          [{ groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: t.ctx.tenant.id }, 'scopeId'],
          [{ groupId: randomUUID(), roleId: role.id }, 'groupId'],
          [{ groupId: group.id, roleId: randomUUID() }, 'roleId'],
          [{ groupId: group.id, roleId: system.id, scopeType: 'DATAPOOL', scopeId: pool.id }, 'roleId'],
          [{ groupId: group.id, roleId: system.id, scopeId: pool.id }, 'roleId'],
          [{ roleId: role.id }, 'groupId'],
          [{ groupId: group.id }, 'roleId'],
          [{ groupId: 'x', roleId: role.id }, 'groupId'],
          [{ groupId: group.id, roleId: role.id, scopeType: 'PLANET' }, 'scopeType'],
          [{ groupId: group.id, roleId: role.id, scopeId: 12 }, 'scopeId'],
          [{ groupId: group.id, roleId: role.id, note: 'x' }, 'note'],
        ];
        for (const [body, field] of cases) {
          const problem = expectFieldError(await request('POST', '/v1/assignments', body), field);
          assert.equal(problem.instance, '/v1/assignments');
        }
        assert.equal((await list(`?groupId=${group.id}`)).totalElements, 0);
      });

      it('answers 409 UNIQUE_CONSTRAINT_VIOLATION to the same group, role and scope twice', async () => {
        const group = await createGroup(t);
        const role = await dataRole();
        const pool = await createDatapool(t);
        await createAssignment(t, { groupId: group.id, roleId: role.id });
        expectProblem(await request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        expectProblem(await request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id, scopeType: 'TENANT', scopeId: t.ctx.tenant.id }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        await createAssignment(t, { groupId: group.id, roleId: role.id, scopeId: pool.id });
        expectProblem(await request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        assert.equal((await list(`?groupId=${group.id}`)).totalElements, 2);
      });
    });

    describe('get and delete', () => {
      it('get answers 404 for an unknown id and 400 for a malformed one', async () => {
        expectProblem(await request('GET', `/v1/assignments/${randomUUID()}`), 404, 'NOT_FOUND');
        expectFieldError(await request('GET', '/v1/assignments/abc'), 'id');
        expectFieldError(await request('DELETE', '/v1/assignments/abc'), 'id');
      });

      it('delete answers 204 without a body, then 404; a stale If-Match answers 412', async () => {
        const assignment = await createAssignment(t, { groupId: (await createGroup(t)).id, roleId: (await dataRole()).id });
        const url = `/v1/assignments/${assignment.id}`;
        expectProblem(await request('DELETE', url, undefined, { 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED');
        const etag = String((await request('GET', url)).headers['etag']);
        const response = await request('DELETE', url, undefined, { 'if-match': etag });
        assert.equal(response.statusCode, 204, response.body);
        assert.equal(response.body, '');
        expectProblem(await request('GET', url), 404, 'NOT_FOUND');
        expectProblem(await request('DELETE', url), 404, 'NOT_FOUND');
      });

      it('the last TENANT assignment of Tenant Administrator cannot be deleted; once a second exists, the first can', async () => {
        const administrator = await seededRole(t, 'Tenant Administrator');
        const administrators = await administratorsGroup(t);
        const tenantAdministration = `?roleId=${administrator.id}&scopeType=TENANT`;
        const [original] = (await list(tenantAdministration)).content;
        assert.equal((await list(tenantAdministration)).totalElements, 1);
        assert.equal(original.group.id, administrators.id);

        const refused = expectProblem(await request('DELETE', `/v1/assignments/${original.id}`), 409, 'LAST_TENANT_ADMINISTRATOR');
        assert.match(refused.detail, /Tenant Administrator/);
        assert.equal((await request('GET', `/v1/assignments/${original.id}`)).statusCode, 200);

        // A second group of administrators (with the bootstrap administrator in it, who must keep working).
        const adminUserId = administrators.contactUser.id;
        const deputies = await createGroup(t, { memberIds: [adminUserId] });
        const second = await createAssignment(t, { groupId: deputies.id, roleId: administrator.id });
        assert.equal((await list(tenantAdministration)).totalElements, 2);
        assert.equal((await request('DELETE', `/v1/assignments/${original.id}`)).statusCode, 204);
        assert.deepEqual(await ids(tenantAdministration), [second.id]);
        expectProblem(await request('DELETE', `/v1/assignments/${second.id}`), 409, 'LAST_TENANT_ADMINISTRATOR');
        expectProblem(await request('DELETE', `/v1/groups/${deputies.id}`), 409, 'LAST_TENANT_ADMINISTRATOR');

        // Put things back as they were for the other tests.
        const restored = await createAssignment(t, { groupId: administrators.id, roleId: administrator.id });
        assert.equal((await request('DELETE', `/v1/assignments/${second.id}`)).statusCode, 204);
        assert.deepEqual(await ids(tenantAdministration), [restored.id]);
      });
    });

    describe('last tenant administrator, as a person', () => {
      // The guard counts TENANT assignments of Tenant Administrator, but an assignment of a group
      // without members administers nothing (the person guard of member changes says so too).
      it('deleting the Administrators\' assignment while only a member-less group holds the role answers 409', async () => {
        const administrator = await seededRole(t, 'Tenant Administrator');
        const administrators = await administratorsGroup(t);
        const original = administrators.assignments.find((a: Json) => a.role.id === administrator.id && a.scopeType === 'TENANT');
        const hollow = await createAssignment(t, { groupId: (await createGroup(t)).id, roleId: administrator.id });
        const response = await request('DELETE', `/v1/assignments/${original.id}`);
        try {
          expectProblem(response, 409, 'LAST_TENANT_ADMINISTRATOR');
        } finally {
          if (response.statusCode === 204) {
            // Nobody can administer any more: put the assignment back through the database.
            await t.ctx.db.insertInto('assignments')
              .values({ id: original.id, group_id: administrators.id, role_id: administrator.id, ...scopeColumns('TENANT', t.ctx.tenant.id) })
              .execute();
          }
          assert.equal((await request('DELETE', `/v1/assignments/${hollow.id}`)).statusCode, 204);
        }
      });
    });

    describe('concurrency', () => {
      // On PostgreSQL the checks run before the insert without locking the group or role, so a
      // delete committed in between makes the insert fail on its foreign key: 500 (reported).
      it('a create racing the delete of its role or of its group answers 201 or 400, never 500', async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < 8; i++) {
          const [role, group] = [await dataRole(), await createGroup(t)];
          const [created, deleted] = await raceInDatabase(t, 'roles', [
            () => request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id }),
            () => request('DELETE', `/v1/roles/${role.id}`),
          ]);
          outcomes.push(`role ${created.statusCode}/${deleted.statusCode}`);
        }
        for (let i = 0; i < 8; i++) {
          const [role, group] = [await dataRole(), await createGroup(t)];
          const [created, deleted] = await raceInDatabase(t, 'groups', [
            () => request('POST', '/v1/assignments', { groupId: group.id, roleId: role.id }),
            () => request('DELETE', `/v1/groups/${group.id}`),
          ]);
          outcomes.push(`group ${created.statusCode}/${deleted.statusCode}`);
        }
        const allowed = new Set(['role 201/409', 'role 400/204', 'group 201/204', 'group 400/204']);
        assert.deepEqual(outcomes.filter((o) => !allowed.has(o)), [], outcomes.join(', '));
      });
    });

    describe('list', () => {
      /** Five assignments over two groups, three roles and one datapool, created one after the other. */
      async function fixture() {
        const [uA, uB, uBoth] = [await createUser(t), await createUser(t), await createUser(t)];
        const word = uniqueName('Zq').replace(/-/g, '');
        const gA = await createGroup(t, { name: uniqueName(`grp ${word}`), memberIds: [uA.id, uBoth.id] });
        const gB = await createGroup(t, { memberIds: [uB.id, uBoth.id] });
        const rX = await dataRole({ description: `describes ${word.toLowerCase()}x` });
        const rY = await dataRole({ name: uniqueName(`role ${word}Y`) });
        const rS = await systemRole();
        const pool = await createDatapool(t);
        const a1 = await createAssignment(t, { groupId: gA.id, roleId: rX.id });
        const a2 = await createAssignment(t, { groupId: gA.id, roleId: rY.id, scopeId: pool.id });
        const a3 = await createAssignment(t, { groupId: gB.id, roleId: rX.id, scopeType: 'DATAPOOL', scopeId: pool.id });
        const a4 = await createAssignment(t, { groupId: gB.id, roleId: rY.id });
        const a5 = await createAssignment(t, { groupId: gB.id, roleId: rS.id });
        const all = [a1, a2, a3, a4, a5];
        return { uA, uB, uBoth, gA, gB, rX, rY, rS, pool, word, all, a: all.map((x) => x.id), only: `id=${all.map((x) => x.id).join(',')}` };
      }

      it('filters by roleId, groupId, userId (through membership), scopeId, scopeType and roleType', async () => {
        const f = await fixture();
        const [a1, a2, a3, a4, a5] = f.a;
        const sortAsc = '&sort=createdAt,asc';
        assert.deepEqual(await ids(`?roleId=${f.rX.id}${sortAsc}`), [a1, a3]);
        assert.deepEqual(await ids(`?groupId=${f.gA.id}${sortAsc}`), [a1, a2]);
        assert.deepEqual(await ids(`?userId=${f.uA.id}${sortAsc}`), [a1, a2]);
        assert.deepEqual(await ids(`?userId=${f.uB.id}${sortAsc}`), [a3, a4, a5]);
        assert.deepEqual(await ids(`?userId=${f.uBoth.id}${sortAsc}`), [a1, a2, a3, a4, a5]);
        assert.deepEqual(await ids(`?scopeId=${f.pool.id}${sortAsc}`), [a2, a3]);
        assert.deepEqual(await ids(`?${f.only}&scopeType=DATAPOOL${sortAsc}`), [a2, a3]);
        assert.deepEqual(await ids(`?${f.only}&scopeType=TENANT${sortAsc}`), [a1, a4, a5]);
        assert.deepEqual(await ids(`?${f.only}&roleType=SYSTEM${sortAsc}`), [a5]);
        assert.deepEqual(await ids(`?${f.only}&roleType=DATA${sortAsc}`), [a1, a2, a3, a4]);
        assert.deepEqual(await ids(`?groupId=${f.gB.id}&roleId=${f.rY.id}`), [a4]);
        assert.deepEqual(await ids(`?scopeId=${f.pool.id}&scopeType=TENANT`), []);
        assert.deepEqual(await ids(`?userId=${randomUUID()}`), []);
        for (const query of ['roleId=x', 'userId=x', 'groupId=x', 'scopeId=x', 'scopeType=GALAXY', 'roleType=ADMIN']) {
          expectFieldError(await request('GET', `/v1/assignments?${query}`), query.split('=')[0]!);
        }
      });

      it('q matches role name, role description or group name, case-insensitively', async () => {
        const f = await fixture();
        const [a1, a2, a3, a4] = f.a;
        const sortAsc = '&sort=createdAt,asc';
        // rX's description, gA's name and rY's name all carry the word.
        assert.deepEqual(await ids(`?q=${encodeURIComponent(f.word.toUpperCase())}${sortAsc}`), [a1, a2, a3, a4]);
        assert.deepEqual(await ids(`?q=${encodeURIComponent(`${f.word.toLowerCase()}x`)}${sortAsc}`), [a1, a3]);
        assert.deepEqual(await ids(`?q=${encodeURIComponent(`${f.word}Y`)}${sortAsc}`), [a2, a4]);
        assert.deepEqual(await ids(`?q=${encodeURIComponent(f.gA.name)}${sortAsc}`), [a1, a2]);
        assert.deepEqual(await ids(`?${f.only}&q=${encodeURIComponent('%')}`), []);
      });

      it('sorts by createdAt ascending and descending (default descending) and refuses unknown sort properties', async () => {
        const f = await fixture();
        assert.deepEqual(await ids(`?${f.only}&sort=createdAt,asc`), f.a);
        assert.deepEqual(await ids(`?${f.only}&sort=createdAt,desc`), [...f.a].reverse());
        assert.deepEqual(await ids(`?${f.only}`), [...f.a].reverse());
        assert.deepEqual(await ids(`?${f.only}&sort=createdAt`), f.a, 'direction defaults to ascending');
        for (const sort of ['name', 'role', 'groupName', 'createdAt,sideways']) {
          expectFieldError(await request('GET', `/v1/assignments?sort=${sort}`), 'sort');
        }
      });

      it('filters by createdAtFrom and createdAtTo, both bounds inclusive', async () => {
        const f = await fixture();
        const [a1, , a3, a4, a5] = f.all;
        const from = await ids(`?${f.only}&sort=createdAt,asc&createdAtFrom=${encodeURIComponent(a3!.createdAt)}`);
        assert.ok(from.includes(a3!.id) && from.includes(a4!.id) && from.includes(a5!.id), 'from is inclusive');
        assert.ok(!from.includes(a1!.id) || a1!.createdAt === a3!.createdAt);
        assert.deepEqual(await ids(`?${f.only}&createdAtFrom=2999-01-01T00:00:00Z`), []);
        assert.deepEqual(await ids(`?${f.only}&createdAtTo=2000-01-01T00:00:00Z`), []);
        assert.equal((await ids(`?${f.only}&createdAtFrom=2000-01-01T00:00:00Z&createdAtTo=2999-01-01T00:00:00Z`)).length, 5);
        expectFieldError(await request('GET', '/v1/assignments?createdAtFrom=yesterday'), 'createdAtFrom');
      });

      // Responses show createdAt to the millisecond while PostgreSQL stores microseconds, so the
      // shown value used as createdAtTo falls just below the stored one (reported; PGlite stores ms).
      it('createdAtTo equal to a shown createdAt includes that assignment', async () => {
        const f = await fixture();
        const [a1, a2] = f.all;
        const upTo = await ids(`?${f.only}&sort=createdAt,asc&createdAtTo=${encodeURIComponent(a2!.createdAt)}`);
        assert.ok(upTo.includes(a1!.id), 'earlier ones are included');
        assert.ok(upTo.includes(a2!.id), `createdAtTo=${a2!.createdAt} must include the assignment created at ${a2!.createdAt}`);
      });

      it('pages: 26 assignments walked 7 at a time, with no repeat and no gap', async () => {
        const group = await createGroup(t);
        const roles = [];
        for (let i = 0; i < 26; i++) roles.push(await dataRole());
        // One transaction: every assignment has the same createdAt, so only the id tie-breaker orders them.
        const replaced = await request('PUT', `/v1/groups/${group.id}/assignments`, roles.map((role) => ({ roleId: role.id })));
        assert.equal(replaced.statusCode, 200, replaced.body);
        const all: string[] = replaced.json().assignments.map((a: Json) => a.id);
        assert.equal(all.length, 26);

        for (const sort of ['', '&sort=createdAt,asc']) {
          const seen: string[] = [];
          for (let page = 0; page < 4; page++) {
            const body = await list(`?groupId=${group.id}&size=7&page=${page}${sort}`);
            assert.equal(body.totalElements, 26);
            assert.equal(body.totalPages, 4);
            assert.equal(body.number, page);
            assert.equal(body.size, 7);
            assert.equal(body.numberOfElements, page < 3 ? 7 : 5);
            assert.equal(body.content.length, body.numberOfElements);
            assert.equal(body.first, page === 0);
            assert.equal(body.last, page === 3);
            assert.equal(body.empty, false);
            assert.deepEqual(body.pageable, { offset: page * 7, pageNumber: page, pageSize: 7, paged: true, unpaged: false, sort: body.sort });
            seen.push(...body.content.map((a: Json) => a.id));
          }
          assert.equal(new Set(seen).size, 26, 'no repeat');
          assert.deepEqual(ascending(seen), ascending(all), 'no gap');
          assert.deepEqual(seen, ascending(all), 'equal createdAt: ordered by id');
        }

        const past = await list(`?groupId=${group.id}&size=7&page=10`);
        assert.deepEqual(past.content, []);
        assert.equal(past.empty, true);
        assert.equal(past.totalElements, 26);
        assert.equal(past.totalPages, 4);
        assert.equal(past.number, 10);
        assert.equal(past.numberOfElements, 0);
        assert.equal(past.first, false);
        assert.equal(past.last, true);

        const big = await list(`?groupId=${group.id}&size=1000`);
        assert.equal(big.content.length, 26);
        assert.equal(big.totalPages, 1);
        assert.equal(big.last, true);
        const defaults = await list(`?groupId=${group.id}`);
        assert.equal(defaults.size, 20);
        assert.equal(defaults.number, 0);
        assert.equal(defaults.content.length, 20);

        expectFieldError(await request('GET', '/v1/assignments?size=1001'), 'size');
        expectFieldError(await request('GET', '/v1/assignments?size=0'), 'size');
        expectFieldError(await request('GET', '/v1/assignments?page=-1'), 'page');
        expectFieldError(await request('GET', '/v1/assignments?page=first'), 'page');
      });

      it('an empty result is an empty first and last page', async () => {
        const body = await list(`?groupId=${randomUUID()}`);
        assert.deepEqual(body.content, []);
        assert.equal(body.totalElements, 0);
        assert.equal(body.totalPages, 0);
        assert.equal(body.empty, true);
        assert.equal(body.first, true);
      });
    });

    describe('authorization', () => {
      it('ASSIGNMENT_READ lists and gets; writes need ASSIGNMENT_WRITE; nothing at all answers 403', async () => {
        const group = await createGroup(t);
        const role = await dataRole();
        const existing = await createAssignment(t, { groupId: group.id, roleId: role.id });
        const reader = await grant(t, uniqueEmail('asg-reader'), ['ASSIGNMENT_READ']);
        assert.equal((await request('GET', '/v1/assignments', undefined, {}, reader)).statusCode, 200);
        assert.equal((await request('GET', `/v1/assignments/${existing.id}`, undefined, {}, reader)).statusCode, 200);
        const other = await dataRole();
        expectProblem(await request('POST', '/v1/assignments', { groupId: group.id, roleId: other.id }, {}, reader), 403, 'ACCESS_DENIED');
        expectProblem(await request('DELETE', `/v1/assignments/${existing.id}`, undefined, {}, reader), 403, 'ACCESS_DENIED');

        const nobody = await t.tokenFor(uniqueEmail('asg-nobody'));
        expectProblem(await request('GET', '/v1/assignments', undefined, {}, nobody), 403, 'ACCESS_DENIED');
        expectProblem(await request('GET', `/v1/assignments/${existing.id}`, undefined, {}, nobody), 403, 'ACCESS_DENIED');

        // ... and DATASET_READ, which the assignment grants (no escalation).
        const writer = await grant(t, uniqueEmail('asg-writer'), ['ASSIGNMENT_WRITE', 'DATASET_READ']);
        const created = await request('POST', '/v1/assignments', { groupId: group.id, roleId: other.id }, {}, writer);
        assert.equal(created.statusCode, 201, created.body);
        assert.equal((await request('DELETE', `/v1/assignments/${created.json().id}`, undefined, {}, writer)).statusCode, 204);
        assert.equal((await request('GET', `/v1/assignments/${existing.id}`)).statusCode, 200);
      });

      it('a grant through a user the caller is not: membership is what counts', async () => {
        const outsider = await createUser(t);
        const group = await createGroup(t);
        const role = await createRole(t, { roleType: 'SYSTEM', permissionIds: await permissionIds(t, ['ASSIGNMENT_READ']) });
        await createAssignment(t, { groupId: group.id, roleId: role.id });
        const token = await t.tokenFor(outsider.email);
        expectProblem(await request('GET', '/v1/assignments', undefined, {}, token), 403, 'ACCESS_DENIED');
        assert.equal((await request('PUT', `/v1/groups/${group.id}`, { name: group.name, memberIds: [outsider.id] })).statusCode, 200);
        assert.equal((await request('GET', '/v1/assignments', undefined, {}, await t.tokenFor(outsider.email))).statusCode, 200);
      });
    });
  });
}
