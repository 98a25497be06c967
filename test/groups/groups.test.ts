import { scopeColumns } from '../../src/access/scopes.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  administratorsGroup, bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem,
  grant, permissionIds, seededRole, uniqueEmail, uniqueName, type TestUser,
} from '../helpers/factories.js';
import { raceInDatabase } from '../helpers/race.js';

/** /v1/groups: CRUD, members and contact, filters, replacement of assignments, deletes, access, idempotency. */

const GROUP_KEYS = ['assignments', 'contactUser', 'createdAt', 'datapools', 'description', 'id', 'members', 'modifiedAt', 'name', 'parentGroup'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Json = Record<string, any>;
const refOf = (user: TestUser) => ({ id: user.id, name: `${user.firstName} ${user.lastName}` });
const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

for (const kind of databaseKinds(import.meta.url)) {
  describe(`groups (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const request = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}, token?: string) =>
      t.app.inject({ method, url, headers: { ...bearer(token ?? t.adminToken), ...headers }, ...(payload === undefined ? {} : { payload: payload as any }) });
    const getGroup = async (id: string) => {
      const response = await request('GET', `/v1/groups/${id}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const listGroups = async (query: string) => {
      const response = await request('GET', `/v1/groups${query}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const dataRole = async () => createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']) });
    const systemRole = async () => createRole(t, { roleType: 'SYSTEM', permissionIds: await permissionIds(t, ['GROUP_READ']) });

    describe('create', () => {
      it('answers 201 with Location, ETag and members and contact as Refs named "First Last"', async () => {
        const [alice, bob] = [await createUser(t, { firstName: 'Alice', lastName: 'Aardvark' }), await createUser(t, { firstName: 'Bob', lastName: 'Zebra' })];
        const name = uniqueName('Team');
        const response = await request('POST', '/v1/groups', { name, description: 'a team', contactUserId: bob.id, memberIds: [bob.id, alice.id] });
        assert.equal(response.statusCode, 201, response.body);
        const group = response.json();
        assert.match(group.id, UUID);
        assert.equal(response.headers['location'], `http://localhost:8080/v1/groups/${group.id}`);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        assert.deepEqual(Object.keys(group).sort(), GROUP_KEYS);
        assert.equal(group.name, name);
        assert.equal(group.description, 'a team');
        assert.deepEqual(group.contactUser, { id: bob.id, name: 'Bob Zebra' });
        assert.deepEqual([...group.members].sort(byId), [refOf(alice), refOf(bob)].sort(byId));
        assert.deepEqual(group.datapools, []);
        assert.deepEqual(group.assignments, []);
        assert.ok(!Number.isNaN(Date.parse(group.createdAt)));

        const fetched = await request('GET', `/v1/groups/${group.id}`);
        assert.deepEqual(fetched.json(), group);
        assert.equal(fetched.headers['etag'], response.headers['etag']);
      });

      it('defaults: empty description, no contact, no members', async () => {
        const group = await createGroup(t);
        assert.equal(group.description, '');
        assert.equal(group.contactUser, null);
        assert.deepEqual(group.members, []);
      });

      it('answers 400 naming the field for every invalid body, and creates nothing', async () => {
        const user = await createUser(t);
        const name = uniqueName('invalid');
        const cases: [Json, string][] = [
          [{}, 'name'],
          [{ name: '' }, 'name'],
          [{ name: ' \t ' }, 'name'],
          [{ name: 5 }, 'name'],
          [{ name, description: false }, 'description'],
          [{ name, memberIds: [user.id, randomUUID()] }, 'memberIds[1]'],
          [{ name, memberIds: ['nope'] }, 'memberIds[0]'],
          [{ name, memberIds: user.id }, 'memberIds'],
          [{ name, contactUserId: randomUUID() }, 'contactUserId'],
          [{ name, contactUserId: 'nope' }, 'contactUserId'],
          [{ name, members: [] }, 'members'],
          [{ name, id: randomUUID() }, 'id'],
        ];
        for (const [body, field] of cases) expectFieldError(await request('POST', '/v1/groups', body), field);
        expectProblem(await request('POST', '/v1/groups', { name, memberIds: [user.id, user.id] }), 400, 'VALIDATION_FAILED');
        expectProblem(await request('POST', '/v1/groups', '{"name":', { 'content-type': 'application/json' }), 400, 'MALFORMED_REQUEST');
        assert.equal((await listGroups(`?name=${name}`)).totalElements, 0);
      });

      it('answers 409 UNIQUE_CONSTRAINT_VIOLATION to a name taken in any letter case', async () => {
        const group = await createGroup(t);
        expectProblem(await request('POST', '/v1/groups', { name: group.name.toUpperCase() }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        expectProblem(await request('POST', '/v1/groups', { name: 'administrators' }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        const other = await createGroup(t);
        expectProblem(await request('PATCH', `/v1/groups/${other.id}`, { name: group.name }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        expectProblem(await request('PUT', `/v1/groups/${other.id}`, { name: group.name.toLowerCase() }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        assert.equal((await getGroup(other.id)).name, other.name);
      });
    });

    describe('update', () => {
      it('PUT replaces: omitted optional fields are cleared', async () => {
        const [a, b] = [await createUser(t), await createUser(t)];
        const group = await createGroup(t, { description: 'kept?', contactUserId: a.id, memberIds: [a.id, b.id] });
        const name = uniqueName('replaced');
        const response = await request('PUT', `/v1/groups/${group.id}`, { name });
        assert.equal(response.statusCode, 200, response.body);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        const replaced = response.json();
        assert.equal(replaced.name, name);
        assert.equal(replaced.description, '');
        assert.equal(replaced.contactUser, null);
        assert.deepEqual(replaced.members, []);
        assert.equal(replaced.createdAt, group.createdAt);
        assert.deepEqual(await getGroup(group.id), replaced);

        const full = (await request('PUT', `/v1/groups/${group.id}`, { name, description: 'd', contactUserId: b.id, memberIds: [a.id] })).json();
        assert.equal(full.description, 'd');
        assert.deepEqual(full.contactUser, refOf(b));
        assert.deepEqual(full.members, [refOf(a)]);
        expectFieldError(await request('PUT', `/v1/groups/${group.id}`, { description: 'no name' }), 'name');
      });

      it('PATCH keeps the fields it is not given', async () => {
        const [a, b, c] = [await createUser(t), await createUser(t), await createUser(t)];
        const group = await createGroup(t, { description: 'original', contactUserId: a.id, memberIds: [a.id, b.id] });
        const patched = await request('PATCH', `/v1/groups/${group.id}`, { description: 'changed' });
        assert.equal(patched.statusCode, 200, patched.body);
        const body = patched.json();
        assert.equal(body.description, 'changed');
        assert.equal(body.name, group.name);
        assert.deepEqual(body.contactUser, refOf(a));
        assert.deepEqual([...body.members].sort(byId), [refOf(a), refOf(b)].sort(byId));

        const members = (await request('PATCH', `/v1/groups/${group.id}`, { memberIds: [c.id] })).json();
        assert.deepEqual(members.members, [refOf(c)]);
        assert.equal(members.description, 'changed');
        assert.deepEqual(members.contactUser, refOf(a));

        const noContact = (await request('PATCH', `/v1/groups/${group.id}`, { contactUserId: null })).json();
        assert.equal(noContact.contactUser, null);
        assert.deepEqual(noContact.members, [refOf(c)]);

        expectFieldError(await request('PATCH', `/v1/groups/${group.id}`, { memberIds: [randomUUID()] }), 'memberIds[0]');
        expectFieldError(await request('PATCH', `/v1/groups/${group.id}`, { name: '' }), 'name');
        expectFieldError(await request('PATCH', `/v1/groups/${group.id}`, { assignments: [] }), 'assignments');
        assert.deepEqual(await getGroup(group.id), noContact);
      });

      it('If-Match: stale answers 412 and changes nothing, current answers 200', async () => {
        const created = await request('POST', '/v1/groups', { name: uniqueName('etag') });
        const stale = String(created.headers['etag']);
        const id = created.json().id;
        const changed = await request('PATCH', `/v1/groups/${id}`, { description: 'v2' }, { 'if-match': stale });
        assert.equal(changed.statusCode, 200, changed.body);
        expectProblem(await request('PATCH', `/v1/groups/${id}`, { description: 'v3' }, { 'if-match': stale }), 412, 'PRECONDITION_FAILED');
        expectProblem(await request('PUT', `/v1/groups/${id}`, { name: uniqueName() }, { 'if-match': stale }), 412, 'PRECONDITION_FAILED');
        expectProblem(await request('DELETE', `/v1/groups/${id}`, undefined, { 'if-match': stale }), 412, 'PRECONDITION_FAILED');
        assert.equal((await getGroup(id)).description, 'v2');
        const deleted = await request('DELETE', `/v1/groups/${id}`, undefined, { 'if-match': String(changed.headers['etag']) });
        assert.equal(deleted.statusCode, 204, deleted.body);
      });

      it('unknown ids answer 404, malformed ids 400', async () => {
        const id = randomUUID();
        expectProblem(await request('GET', `/v1/groups/${id}`), 404, 'NOT_FOUND');
        expectProblem(await request('PUT', `/v1/groups/${id}`, { name: uniqueName() }), 404, 'NOT_FOUND');
        expectProblem(await request('PATCH', `/v1/groups/${id}`, {}), 404, 'NOT_FOUND');
        expectProblem(await request('DELETE', `/v1/groups/${id}`), 404, 'NOT_FOUND');
        expectProblem(await request('PUT', `/v1/groups/${id}/assignments`, []), 404, 'NOT_FOUND');
        expectFieldError(await request('GET', '/v1/groups/x1'), 'id');
        expectFieldError(await request('PUT', '/v1/groups/x1/assignments', []), 'groupId');
      });
    });

    describe('list', () => {
      it('filters by name, description, q, contactUserId, memberIds and id', async () => {
        const [u1, u2, u3, outsider] = [await createUser(t), await createUser(t), await createUser(t), await createUser(t)];
        const prefix = uniqueName('Flt');
        const a = await createGroup(t, { name: `${prefix} North`, description: 'Sensors on the RIVER', contactUserId: u1.id, memberIds: [u1.id] });
        const b = await createGroup(t, { name: `${prefix} South`, description: 'parking', contactUserId: u2.id, memberIds: [u2.id, u3.id] });
        const c = await createGroup(t, { name: `${prefix} River`, description: 'water', memberIds: [u3.id] });
        const names = async (query: string) =>
          (await listGroups(`?name=${encodeURIComponent(prefix)}&sort=name,asc${query ? `&${query}` : ''}`)).content.map((g: Json) => g.name);

        assert.deepEqual(await names(''), [a.name, c.name, b.name]);
        assert.deepEqual((await listGroups(`?name=${encodeURIComponent(`${prefix} north`.toUpperCase())}`)).content.map((g: Json) => g.id), [a.id]);
        assert.deepEqual(await names('description=river'), [a.name]);
        assert.deepEqual(await names('q=river'), [a.name, c.name]);
        assert.deepEqual(await names(`contactUserId=${u2.id}`), [b.name]);
        assert.deepEqual(await names(`memberIds=${u1.id}`), [a.name]);
        assert.deepEqual(await names(`memberIds=${u3.id}`), [c.name, b.name]);
        assert.deepEqual(await names(`memberIds=${u1.id},${u2.id}`), [a.name, b.name]);
        assert.deepEqual(await names(`memberIds=${u1.id}&memberIds=${u3.id}`), [a.name, c.name, b.name]);
        assert.deepEqual(await names(`memberIds=${outsider.id}`), []);
        assert.deepEqual(await names(`id=${b.id},${c.id}`), [c.name, b.name]);
        const descending = await listGroups(`?name=${encodeURIComponent(prefix)}&sort=name,desc`);
        assert.deepEqual(descending.content.map((g: Json) => g.name), [b.name, c.name, a.name]);

        const page = await listGroups(`?name=${encodeURIComponent(prefix)}&size=2&sort=name,asc`);
        assert.equal(page.totalElements, 3);
        assert.equal(page.totalPages, 2);
        assert.equal(page.numberOfElements, 2);
        assert.equal(page.first, true);
        assert.equal(page.last, false);
        for (const query of ['contactUserId=nope', 'memberIds=nope', 'sort=members', 'page=-1', 'size=1001']) {
          expectFieldError(await request('GET', `/v1/groups?${query}`), query.split('=')[0]!);
        }
      });
    });

    describe('replace assignments (PUT /groups/{groupId}/assignments)', () => {
      it('replaces by difference: unchanged ones keep id and createdAt, removed ones go, new ones appear', async () => {
        const [r1, r2, r3] = [await dataRole(), await dataRole(), await dataRole()];
        const pool = await createDatapool(t);
        const group = await createGroup(t);
        const kept = await createAssignment(t, { groupId: group.id, roleId: r1.id });
        const removed = await createAssignment(t, { groupId: group.id, roleId: r2.id });

        const response = await request('PUT', `/v1/groups/${group.id}/assignments`, [
          { roleId: r1.id, scopeType: 'TENANT' },
          { roleId: r3.id, scopeType: 'DATAPOOL', scopeId: pool.id },
        ]);
        assert.equal(response.statusCode, 200, response.body);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        const body = response.json();
        assert.deepEqual(Object.keys(body).sort(), GROUP_KEYS);
        assert.equal(body.assignments.length, 2);
        const stillThere = body.assignments.find((a: Json) => a.role.id === r1.id);
        assert.equal(stillThere.id, kept.id);
        assert.equal(stillThere.createdAt, kept.createdAt);
        assert.equal(stillThere.scopeType, 'TENANT');
        const added = body.assignments.find((a: Json) => a.role.id === r3.id);
        assert.ok(added);
        assert.notEqual(added.id, removed.id);
        assert.equal(added.scopeType, 'DATAPOOL');
        assert.deepEqual(added.scope, { id: pool.id, name: pool.name });
        assert.deepEqual(added.group, { id: group.id, name: group.name, description: group.description });
        assert.ok(!body.assignments.some((a: Json) => a.role.id === r2.id));
        expectProblem(await request('GET', `/v1/assignments/${removed.id}`), 404, 'NOT_FOUND');
        assert.equal((await request('GET', `/v1/assignments/${added.id}`)).statusCode, 200);
        assert.deepEqual(body.datapools, [{ id: pool.id, name: pool.name }]);
        assert.deepEqual(await getGroup(group.id), body);

        const cleared = await request('PUT', `/v1/groups/${group.id}/assignments`, []);
        assert.equal(cleared.statusCode, 200, cleared.body);
        assert.deepEqual(cleared.json().assignments, []);
        assert.deepEqual(cleared.json().datapools, []);
        expectProblem(await request('GET', `/v1/assignments/${kept.id}`), 404, 'NOT_FOUND');
      });

      it('collapses duplicate items into one assignment', async () => {
        const role = await dataRole();
        const group = await createGroup(t);
        const response = await request('PUT', `/v1/groups/${group.id}/assignments`, [
          { roleId: role.id }, { roleId: role.id }, { roleId: role.id, scopeType: 'TENANT' }, { roleId: role.id, scopeId: t.ctx.tenant.id },
        ]);
        assert.equal(response.statusCode, 200, response.body);
        const assignments = response.json().assignments;
        assert.equal(assignments.length, 1);
        assert.equal(assignments[0].scopeType, 'TENANT');
        assert.deepEqual(assignments[0].scope, { id: t.ctx.tenant.id, name: 'default' });
      });

      it('answers 400 naming the item for an unknown role, scope, or a SYSTEM role below TENANT, and changes nothing', async () => {
        const role = await dataRole();
        const system = await systemRole();
        const pool = await createDatapool(t);
        const group = await createGroup(t);
        const existing = await createAssignment(t, { groupId: group.id, roleId: role.id });
        const url = `/v1/groups/${group.id}/assignments`;
        expectFieldError(await request('PUT', url, [{ roleId: role.id }, { roleId: randomUUID() }]), '[1].roleId');
        expectFieldError(await request('PUT', url, [{ roleId: system.id, scopeType: 'DATAPOOL', scopeId: pool.id }]), '[0].roleId');
        expectFieldError(await request('PUT', url, [{ roleId: system.id, scopeId: pool.id }]), '[0].roleId');
        expectFieldError(await request('PUT', url, [{ roleId: role.id, scopeType: 'DATAPOOL', scopeId: randomUUID() }]), '[0].scopeId');
        expectFieldError(await request('PUT', url, [{ roleId: role.id, scopeType: 'DATAPOOL' }]), '[0].scopeId');
        expectFieldError(await request('PUT', url, [{ roleId: role.id, scopeId: randomUUID() }]), '[0].scopeId');
        expectFieldError(await request('PUT', url, [{ roleId: role.id, groupId: group.id }]), '[0].groupId');
        expectFieldError(await request('PUT', url, [{ roleId: role.id, scopeType: 'GALAXY' }]), '[0].scopeType');
        expectFieldError(await request('PUT', url, { roleId: role.id }), 'body');
        const after = await getGroup(group.id);
        assert.deepEqual(after.assignments.map((a: Json) => a.id), [existing.id]);
      });

      it('needs GROUP_WRITE and ASSIGNMENT_WRITE', async () => {
        const role = await dataRole();
        const group = await createGroup(t);
        const groupWriter = await grant(t, uniqueEmail('gw'), ['GROUP_WRITE', 'GROUP_READ']);
        expectProblem(await request('PUT', `/v1/groups/${group.id}/assignments`, [{ roleId: role.id }], {}, groupWriter), 403, 'ACCESS_DENIED');
        // ... and DATASET_READ, which the assignment grants (no escalation).
        const both = await grant(t, uniqueEmail('gw-aw'), ['GROUP_WRITE', 'ASSIGNMENT_WRITE', 'DATASET_READ']);
        const response = await request('PUT', `/v1/groups/${group.id}/assignments`, [{ roleId: role.id }], {}, both);
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json().assignments.length, 1);
      });

      it('refuses to remove the Administrators group\'s Tenant Administrator assignment (409) and changes nothing', async () => {
        const administrators = await administratorsGroup(t);
        const administrator = await seededRole(t, 'Tenant Administrator');
        const consumer = await seededRole(t, 'Data Consumer');
        const before = administrators.assignments.map((a: Json) => a.id).sort();
        assert.ok(administrators.assignments.some((a: Json) => a.role.id === administrator.id && a.scopeType === 'TENANT'));
        const url = `/v1/groups/${administrators.id}/assignments`;
        expectProblem(await request('PUT', url, []), 409, 'LAST_TENANT_ADMINISTRATOR');
        expectProblem(await request('PUT', url, [{ roleId: consumer.id }]), 409, 'LAST_TENANT_ADMINISTRATOR');
        const after = await getGroup(administrators.id);
        assert.deepEqual(after.assignments.map((a: Json) => a.id).sort(), before);
        assert.ok(!after.assignments.some((a: Json) => a.role.id === consumer.id));
        // The administrator still administers.
        assert.equal((await request('GET', '/v1/groups')).statusCode, 200);
      });

      it('refuses to move Tenant Administrator away from every person (only a member-less group would keep it)', async () => {
        const administrators = await administratorsGroup(t);
        const administrator = await seededRole(t, 'Tenant Administrator');
        const original = administrators.assignments.find((a: Json) => a.role.id === administrator.id && a.scopeType === 'TENANT');
        const hollow = await createAssignment(t, { groupId: (await createGroup(t)).id, roleId: administrator.id });
        const response = await request('PUT', `/v1/groups/${administrators.id}/assignments`, []);
        try {
          expectProblem(response, 409, 'LAST_TENANT_ADMINISTRATOR');
        } finally {
          if (response.statusCode === 200) {
            // Nobody can administer any more: put the assignment back through the database.
            await t.ctx.db.insertInto('assignments')
              .values({ id: original.id, group_id: administrators.id, role_id: administrator.id, ...scopeColumns('TENANT', t.ctx.tenant.id) })
              .execute();
          }
          assert.equal((await request('DELETE', `/v1/assignments/${hollow.id}`)).statusCode, 204);
        }
      });

      it('honours If-Match like every other PUT (stale answers 412)', async () => {
        const role = await dataRole();
        const created = await request('POST', '/v1/groups', { name: uniqueName('etag-asg') });
        const stale = String(created.headers['etag']);
        const id = created.json().id;
        assert.equal((await request('PATCH', `/v1/groups/${id}`, { description: 'changed' })).statusCode, 200);
        const response = await request('PUT', `/v1/groups/${id}/assignments`, [{ roleId: role.id }], { 'if-match': stale });
        expectProblem(response, 412, 'PRECONDITION_FAILED');
        assert.deepEqual((await getGroup(id)).assignments, []);
      });
    });

    describe('concurrency', () => {
      // createGroup checks the member ids, then inserts the memberships; a user deleted in between
      // makes the insert fail on its foreign key: 500 on PostgreSQL (reported).
      it('a create naming a member that is being deleted answers 201 or 400, never 500', async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < 8; i++) {
          const user = await createUser(t);
          const [created, deleted] = await raceInDatabase(t, 'users', [
            () => request('POST', '/v1/groups', { name: uniqueName('race'), memberIds: [user.id] }),
            () => request('DELETE', `/v1/users/${user.id}`),
          ]);
          outcomes.push(`${created.statusCode}/${deleted.statusCode}`);
        }
        assert.deepEqual(outcomes.filter((o) => o !== '201/204' && o !== '400/204' && o !== '201/409'), [], outcomes.join(', '));
      });

      it('member changes, assignment replacement and delete of one group never deadlock', async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < 6; i++) {
          const role = await dataRole();
          const group = await createGroup(t, { memberIds: [(await createUser(t)).id] });
          await createAssignment(t, { groupId: group.id, roleId: role.id });
          const [replaced, put, deleted] = await raceInDatabase(t, 'groups', [
            () => request('PUT', `/v1/groups/${group.id}/assignments`, []),
            () => request('PUT', `/v1/groups/${group.id}`, { name: group.name }),
            () => request('DELETE', `/v1/groups/${group.id}`),
          ]);
          outcomes.push(`${replaced.statusCode}/${put.statusCode}/${deleted.statusCode}`);
        }
        assert.ok(outcomes.every((o) => /^(200|404)\/(200|404)\/204$/.test(o)), outcomes.join(', '));
      });
    });

    describe('delete', () => {
      it('answers 204, then 404; the group\'s assignments and memberships go with it, the users stay', async () => {
        const user = await createUser(t);
        const role = await dataRole();
        const group = await createGroup(t, { memberIds: [user.id], contactUserId: user.id });
        const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id });
        const response = await request('DELETE', `/v1/groups/${group.id}`);
        assert.equal(response.statusCode, 204, response.body);
        assert.equal(response.body, '');
        expectProblem(await request('GET', `/v1/groups/${group.id}`), 404, 'NOT_FOUND');
        expectProblem(await request('GET', `/v1/assignments/${assignment.id}`), 404, 'NOT_FOUND');
        assert.equal((await request('GET', `/v1/assignments?groupId=${group.id}`)).json().totalElements, 0);
        assert.equal((await request('GET', `/v1/roles/${role.id}`)).json().groupCount, 0);
        // The user can still be a member of another group.
        assert.equal((await createGroup(t, { memberIds: [user.id] })).members.length, 1);
      });

      it('refuses to delete the Administrators group (last tenant administrator)', async () => {
        const administrators = await administratorsGroup(t);
        expectProblem(await request('DELETE', `/v1/groups/${administrators.id}`), 409, 'LAST_TENANT_ADMINISTRATOR');
        assert.deepEqual(await getGroup(administrators.id), administrators);
      });
    });

    describe('datapools field', () => {
      it('lists the datapools where the group holds DATAPOOL assignments, not the TENANT ones', async () => {
        const [r1, r2] = [await dataRole(), await dataRole()];
        const [p1, p2, p3] = [await createDatapool(t, { name: uniqueName('pool-b') }), await createDatapool(t, { name: uniqueName('pool-a') }), await createDatapool(t)];
        const group = await createGroup(t);
        await createAssignment(t, { groupId: group.id, roleId: r1.id });
        await createAssignment(t, { groupId: group.id, roleId: r1.id, scopeType: 'DATAPOOL', scopeId: p1.id });
        await createAssignment(t, { groupId: group.id, roleId: r2.id, scopeType: 'DATAPOOL', scopeId: p1.id });
        await createAssignment(t, { groupId: group.id, roleId: r2.id, scopeId: p2.id });
        const other = await createGroup(t);
        await createAssignment(t, { groupId: other.id, roleId: r1.id, scopeId: p3.id });
        const current = await getGroup(group.id);
        assert.deepEqual([...current.datapools].sort(byId), [{ id: p1.id, name: p1.name }, { id: p2.id, name: p2.name }].sort(byId));
        assert.equal(current.assignments.length, 4);
      });
    });

    describe('authorization', () => {
      it('without any permission: 403 ACCESS_DENIED problem on every operation', async () => {
        const group = await createGroup(t);
        const tokens = [await t.tokenFor(uniqueEmail('unknown')), await grant(t, uniqueEmail('nothing'), [])];
        for (const token of tokens) {
          const operations: [string, string, unknown][] = [
            ['GET', '/v1/groups', undefined], ['GET', `/v1/groups/${group.id}`, undefined], ['POST', '/v1/groups', { name: uniqueName() }],
            ['PUT', `/v1/groups/${group.id}`, { name: uniqueName() }], ['PATCH', `/v1/groups/${group.id}`, {}],
            ['DELETE', `/v1/groups/${group.id}`, undefined], ['PUT', `/v1/groups/${group.id}/assignments`, []],
          ];
          for (const [method, url, payload] of operations) {
            const body = expectProblem(await request(method as 'GET', url, payload, {}, token), 403, 'ACCESS_DENIED');
            assert.equal(body.type, 'urn:platform:error:ACCESS_DENIED');
            assert.equal(body.instance, url);
          }
        }
        assert.deepEqual(await getGroup(group.id), group);
      });

      it('GROUP_READ only: list and get answer 200, POST, PUT, PATCH and DELETE 403', async () => {
        const group = await createGroup(t);
        const token = await grant(t, uniqueEmail('group-reader'), ['GROUP_READ']);
        const list = await request('GET', '/v1/groups', undefined, {}, token);
        assert.equal(list.statusCode, 200, list.body);
        assert.ok(list.json().totalElements >= 1);
        assert.equal((await request('GET', `/v1/groups/${group.id}`, undefined, {}, token)).statusCode, 200);
        const name = uniqueName('forbidden');
        expectProblem(await request('POST', '/v1/groups', { name }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('PUT', `/v1/groups/${group.id}`, { name }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('PATCH', `/v1/groups/${group.id}`, { name }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('DELETE', `/v1/groups/${group.id}`, undefined, {}, token), 403, 'ACCESS_DENIED');
        assert.equal((await listGroups(`?name=${name}`)).totalElements, 0);
      });

      it('GROUP_READ granted only on a datapool (not TENANT): 403', async () => {
        const pool = await createDatapool(t);
        const token = await grant(t, uniqueEmail('pool-group-reader'), ['GROUP_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        expectProblem(await request('GET', '/v1/groups', undefined, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': pool.id }, token), 403, 'ACCESS_DENIED');
      });

      it('X-Allowed-Scope-Ids: another uuid hides the TENANT grant; the tenant id or * keep it', async () => {
        const token = await grant(t, uniqueEmail('scoped-group-reader'), ['GROUP_READ']);
        expectProblem(await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': randomUUID() }, token), 403, 'ACCESS_DENIED');
        assert.equal((await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': t.ctx.tenant.id }, token)).statusCode, 200);
        assert.equal((await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': t.ctx.tenant.id.toUpperCase() }, token)).statusCode, 200);
        assert.equal((await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': '*' }, token)).statusCode, 200);
        expectFieldError(await request('GET', '/v1/groups', undefined, { 'x-allowed-scope-ids': 'not-a-uuid' }, token), 'X-Allowed-Scope-Ids');
      });
    });

    describe('Idempotency-Key on POST /v1/groups', () => {
      it('replays the first 201 for the same key and body, and creates one group', async () => {
        const key = randomUUID();
        const body = { name: uniqueName('idem'), description: 'once' };
        const first = await request('POST', '/v1/groups', body, { 'idempotency-key': key });
        assert.equal(first.statusCode, 201, first.body);
        assert.equal(first.headers['idempotent-replayed'], undefined);
        const second = await request('POST', '/v1/groups', body, { 'idempotency-key': key });
        assert.equal(second.statusCode, 201, second.body);
        assert.equal(second.headers['idempotent-replayed'], 'true');
        assert.equal(second.headers['location'], first.headers['location']);
        assert.equal(second.headers['etag'], first.headers['etag']);
        assert.match(String(second.headers['content-type']), /^application\/json/);
        assert.deepEqual(second.json(), first.json());
        assert.equal((await listGroups(`?name=${body.name}`)).totalElements, 1);
      });

      it('answers 409 to the same key with another body', async () => {
        const key = randomUUID();
        const name = uniqueName('idem-a');
        assert.equal((await request('POST', '/v1/groups', { name }, { 'idempotency-key': key })).statusCode, 201);
        const other = uniqueName('idem-b');
        const conflict = await request('POST', '/v1/groups', { name: other }, { 'idempotency-key': key });
        assert.equal(conflict.statusCode, 409, conflict.body);
        assert.match(String(conflict.headers['content-type']), /^application\/problem\+json/);
        assert.equal((await listGroups(`?name=${other}`)).totalElements, 0);
      });

      it('lets different callers use the same key independently', async () => {
        const key = `shared-${randomUUID()}`;
        const one = await grant(t, uniqueEmail('idem-one'), ['GROUP_WRITE']);
        const two = await grant(t, uniqueEmail('idem-two'), ['GROUP_WRITE']);
        const first = await request('POST', '/v1/groups', { name: uniqueName('idem-one') }, { 'idempotency-key': key }, one);
        const second = await request('POST', '/v1/groups', { name: uniqueName('idem-two') }, { 'idempotency-key': key }, two);
        assert.equal(first.statusCode, 201, first.body);
        assert.equal(second.statusCode, 201, second.body);
        assert.equal(second.headers['idempotent-replayed'], undefined);
        assert.notEqual(second.json().id, first.json().id);
      });

      it('does not keep a failed attempt: the same key may be retried after a 4xx', async () => {
        const key = randomUUID();
        const taken = await createGroup(t);
        expectProblem(await request('POST', '/v1/groups', { name: taken.name }, { 'idempotency-key': key }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        const retried = await request('POST', '/v1/groups', { name: uniqueName('retry') }, { 'idempotency-key': key });
        assert.equal(retried.statusCode, 201, retried.body);
      });
    });
  });
}
