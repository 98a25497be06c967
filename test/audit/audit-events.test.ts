import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem, grant, permissionIds,
  seededRole, uniqueEmail, uniqueName,
} from '../helpers/factories.js';

/**
 * GET /v1/audit-events and the events every audited change writes: type, actor, request id,
 * before and after; none for a change that changed nothing, was refused or was rolled back;
 * filters and paging; ASSIGNMENT_READ at TENANT; append-only, down to the table.
 */

type Json = Record<string, any>;
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const sta = (slug = 'sensors') => ({ name: 'Sensors', slug, standard: 'STA', version: '1.1' });
const sorted = (ids: string[]) => [...ids].sort();

for (const kind of databaseKinds(import.meta.url)) {
  describe(`audit events (${kind})`, () => {
    let t: TestApp;
    let adminId: string;
    before(async () => {
      t = await buildTestApp(kind);
      adminId = (await call('GET', '/v1/users/me')).json().id;
    });
    after(() => t.close());

    const call = (method: Method, url: string, payload?: unknown, token = t.adminToken, headers: Record<string, string> = {}) =>
      t.app.inject({ method, url, headers: { ...bearer(token), ...headers }, ...(payload === undefined ? {} : { payload: payload as Json }) });
    /** A write as the administrator, tagged with a request id; asserts its status. */
    const write = async (method: Method, url: string, payload: unknown, requestId: string, status?: number) => {
      const response = await call(method, url, payload, t.adminToken, { 'x-request-id': requestId });
      assert.equal(response.statusCode, status ?? (method === 'POST' ? 201 : method === 'DELETE' ? 204 : 200), response.body);
      return response.statusCode === 204 ? null : response.json();
    };
    const page = async (query: string) => {
      const response = await call('GET', `/v1/audit-events${query ? `?${query}` : ''}`);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    /** The events about one object, oldest first. */
    const eventsOf = async (objectId: string): Promise<Json[]> => (await page(`objectId=${objectId}&sort=occurredAt,asc&size=1000`)).content;
    const settled = async (id: string): Promise<Json | null> => {
      for (let i = 0; i < 250; i++) {
        const response = await call('GET', `/v1/datasets/${id}`);
        if (response.statusCode === 404) return null;
        if (response.json().pendingSagaType === null) return response.json();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`the saga of dataset ${id} did not finish`);
    };
    const dataRole = async (names: string[]) => createRole(t, { permissionIds: await permissionIds(t, names) });

    describe('assignments', () => {
      it('POST and DELETE /assignments write ASSIGNMENT_CREATED and ASSIGNMENT_DELETED with actor, request id, before and after', async () => {
        const group = await createGroup(t);
        const role = await dataRole(['DATASET_READ']);
        const created = await write('POST', '/v1/assignments', { groupId: group.id, roleId: role.id }, 'req-assign-create');
        const state = { groupId: group.id, roleId: role.id, scopeType: 'TENANT', scopeId: t.ctx.tenant.id };
        let events = await eventsOf(created.id);
        assert.equal(events.length, 1);
        const [event] = events;
        assert.deepEqual(Object.keys(event).sort(), ['actorId', 'after', 'before', 'id', 'objectId', 'objectType', 'occurredAt', 'requestId', 'type']);
        assert.deepEqual(
          { type: event.type, actorId: event.actorId, objectType: event.objectType, objectId: event.objectId, before: event.before, after: event.after, requestId: event.requestId },
          { type: 'ASSIGNMENT_CREATED', actorId: adminId, objectType: 'ASSIGNMENT', objectId: created.id, before: null, after: state, requestId: 'req-assign-create' },
        );
        assert.match(event.occurredAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

        await write('DELETE', `/v1/assignments/${created.id}`, undefined, 'req-assign-delete');
        events = await eventsOf(created.id);
        assert.deepEqual(events.map((e) => [e.type, e.before, e.after, e.requestId, e.actorId]), [
          ['ASSIGNMENT_CREATED', null, state, 'req-assign-create', adminId],
          ['ASSIGNMENT_DELETED', state, null, 'req-assign-delete', adminId],
        ]);
      });

      it('PUT /groups/{id}/assignments records what it deletes and inserts, and nothing when the set is unchanged', async () => {
        const pool = await createDatapool(t);
        const group = await createGroup(t);
        const kept = await dataRole(['DATASET_READ']);
        const dropped = await dataRole(['DATASET_UPDATE']);
        const added = await dataRole(['DATASET_DELETE']);
        const keptAssignment = await createAssignment(t, { groupId: group.id, roleId: kept.id });
        const droppedAssignment = await createAssignment(t, { groupId: group.id, roleId: dropped.id });
        const body = [{ roleId: kept.id }, { roleId: added.id, scopeType: 'DATAPOOL', scopeId: pool.id }];
        const after = await write('PUT', `/v1/groups/${group.id}/assignments`, body, 'req-group-assignments');
        const addedAssignment = after.assignments.find((a: Json) => a.role.id === added.id);
        const droppedEvents = await eventsOf(droppedAssignment.id);
        assert.deepEqual(droppedEvents.map((e) => e.type), ['ASSIGNMENT_CREATED', 'ASSIGNMENT_DELETED']);
        assert.equal(droppedEvents[1]!.requestId, 'req-group-assignments');
        assert.deepEqual(droppedEvents[1]!.before, { groupId: group.id, roleId: dropped.id, scopeType: 'TENANT', scopeId: t.ctx.tenant.id });
        const addedEvents = await eventsOf(addedAssignment.id);
        assert.deepEqual(addedEvents.map((e) => [e.type, e.requestId, e.before, e.after]), [
          ['ASSIGNMENT_CREATED', 'req-group-assignments', null, { groupId: group.id, roleId: added.id, scopeType: 'DATAPOOL', scopeId: pool.id }],
        ]);
        assert.equal((await eventsOf(keptAssignment.id)).length, 1, 'the unchanged assignment has only its creation');

        await write('PUT', `/v1/groups/${group.id}/assignments`, body, 'req-group-assignments-again');
        assert.equal((await page('type=ASSIGNMENT_CREATED&type=ASSIGNMENT_DELETED&size=1000')).content.filter((e: Json) => e.requestId === 'req-group-assignments-again').length, 0);
      });

      it('the assignments of a datapool body are recorded, and so are those its deletion cascades', async () => {
        const group = await createGroup(t);
        const role = await dataRole(['DATASET_READ']);
        const pool = await write('POST', '/v1/datapools', { name: uniqueName('pool'), description: 'd', assignments: [{ groupId: group.id, roleId: role.id }] }, 'req-pool-create');
        const [assignment] = (await call('GET', `/v1/datapools/${pool.id}/assignments`)).json();
        const state = { groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id };
        await write('DELETE', `/v1/datapools/${pool.id}`, undefined, 'req-pool-delete');
        assert.deepEqual((await eventsOf(assignment.id)).map((e) => [e.type, e.requestId, e.before, e.after]), [
          ['ASSIGNMENT_CREATED', 'req-pool-create', null, state],
          ['ASSIGNMENT_DELETED', 'req-pool-delete', state, null],
        ]);
      });

      it('deleting a group records the removal of its assignments and of its members', async () => {
        const member = await createUser(t);
        const group = await createGroup(t, { memberIds: [member.id] });
        const role = await dataRole(['DATASET_READ']);
        const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id });
        await write('DELETE', `/v1/groups/${group.id}`, undefined, 'req-group-delete');
        const assignmentEvents = await eventsOf(assignment.id);
        assert.deepEqual(assignmentEvents.map((e) => e.type), ['ASSIGNMENT_CREATED', 'ASSIGNMENT_DELETED']);
        assert.equal(assignmentEvents[1]!.requestId, 'req-group-delete');
        const memberEvents = await eventsOf(group.id);
        assert.deepEqual(memberEvents.map((e) => [e.type, e.before, e.after]), [
          ['GROUP_MEMBERS_CHANGED', null, [member.id]],
          ['GROUP_MEMBERS_CHANGED', [member.id], null],
        ]);
      });
    });

    describe('groups, roles and users', () => {
      it('GROUP_MEMBERS_CHANGED on create and on a member change, with sorted id lists; none when the members stay', async () => {
        const [a, b] = [await createUser(t), await createUser(t)];
        const group = await write('POST', '/v1/groups', { name: uniqueName('group'), memberIds: [a.id] }, 'req-members-create');
        await write('PATCH', `/v1/groups/${group.id}`, { memberIds: [b.id, a.id] }, 'req-members-add');
        await write('PATCH', `/v1/groups/${group.id}`, { description: 'only the description' }, 'req-members-none');
        await write('PUT', `/v1/groups/${group.id}`, { name: group.name, memberIds: [a.id, b.id] }, 'req-members-same');
        await write('PUT', `/v1/groups/${group.id}`, { name: group.name }, 'req-members-clear');
        assert.deepEqual((await eventsOf(group.id)).map((e) => [e.type, e.objectType, e.requestId, e.before, e.after]), [
          ['GROUP_MEMBERS_CHANGED', 'GROUP', 'req-members-create', null, [a.id]],
          ['GROUP_MEMBERS_CHANGED', 'GROUP', 'req-members-add', [a.id], sorted([a.id, b.id])],
          ['GROUP_MEMBERS_CHANGED', 'GROUP', 'req-members-clear', sorted([a.id, b.id]), []],
        ]);
        const empty = await createGroup(t);
        assert.deepEqual(await eventsOf(empty.id), [], 'a group created without members changed no membership');
      });

      it('ROLE_PERMISSIONS_CHANGED with permission names; none for a change of name only', async () => {
        const role = await write('POST', '/v1/roles', { name: uniqueName('role'), roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']) }, 'req-role-create');
        await write('PATCH', `/v1/roles/${role.id}`, { permissionIds: await permissionIds(t, ['DATASET_UPDATE', 'DATASET_READ']) }, 'req-role-add');
        await write('PATCH', `/v1/roles/${role.id}`, { name: uniqueName('renamed') }, 'req-role-rename');
        await write('DELETE', `/v1/roles/${role.id}`, undefined, 'req-role-delete');
        assert.deepEqual((await eventsOf(role.id)).map((e) => [e.type, e.objectType, e.requestId, e.before, e.after]), [
          ['ROLE_PERMISSIONS_CHANGED', 'ROLE', 'req-role-create', null, ['DATASET_READ']],
          ['ROLE_PERMISSIONS_CHANGED', 'ROLE', 'req-role-add', ['DATASET_READ'], ['DATASET_READ', 'DATASET_UPDATE']],
          ['ROLE_PERMISSIONS_CHANGED', 'ROLE', 'req-role-delete', ['DATASET_READ', 'DATASET_UPDATE'], null],
        ]);
      });

      it('USER_GROUPS_CHANGED on create with groupIds, PUT /users/{id}/groups, PATCH groupIds and delete; none when unchanged', async () => {
        const [g1, g2] = [await createGroup(t), await createGroup(t)];
        const user = await write('POST', '/v1/users', { email: uniqueEmail(), firstName: 'Ada', lastName: 'Audit', groupIds: [g1.id] }, 'req-user-create');
        await write('PUT', `/v1/users/${user.id}/groups`, [g2.id, g1.id], 'req-user-groups');
        await write('PUT', `/v1/users/${user.id}/groups`, [g1.id, g2.id], 'req-user-groups-same');
        await write('PATCH', `/v1/users/${user.id}`, { groupIds: [g2.id] }, 'req-user-patch');
        await write('PATCH', `/v1/users/${user.id}`, { firstName: 'Adele' }, 'req-user-rename');
        await write('DELETE', `/v1/users/${user.id}`, undefined, 'req-user-delete');
        assert.deepEqual((await eventsOf(user.id)).map((e) => [e.type, e.objectType, e.requestId, e.before, e.after]), [
          ['USER_GROUPS_CHANGED', 'USER', 'req-user-create', null, [g1.id]],
          ['USER_GROUPS_CHANGED', 'USER', 'req-user-groups', [g1.id], sorted([g1.id, g2.id])],
          ['USER_GROUPS_CHANGED', 'USER', 'req-user-patch', sorted([g1.id, g2.id]), [g2.id]],
          ['USER_GROUPS_CHANGED', 'USER', 'req-user-delete', [g2.id], null],
        ]);
      });
    });

    describe('datasets', () => {
      it('every lifecycle step writes its event with the dataset state before and after; an unchanged PATCH writes none', async () => {
        const group = await createGroup(t);
        const consumer = await seededRole(t, 'Data Consumer');
        const created = await write('POST', '/v1/datasets', {
          name: uniqueName('Audited'), description: 'first', namedApis: [sta()], assignments: [{ groupId: group.id, roleId: consumer.id }],
        }, 'req-ds-create');
        const id = created.id;
        await settled(id);
        await write('PATCH', `/v1/datasets/${id}`, { description: 'second' }, 'req-ds-patch');
        await write('PATCH', `/v1/datasets/${id}`, { description: 'second' }, 'req-ds-patch-same');
        await write('POST', `/v1/datasets/${id}/stage`, undefined, 'req-ds-stage', 200);
        await write('PATCH', `/v1/datasets/${id}/ready/meta`, { description: 'third' }, 'req-ds-ready-meta');
        await write('POST', `/v1/datasets/${id}/unstage`, undefined, 'req-ds-unstage', 200);
        await write('POST', `/v1/datasets/${id}/release`, undefined, 'req-ds-release', 202);
        await settled(id);
        await write('PATCH', `/v1/datasets/${id}/released/meta`, { name: 'Released name' }, 'req-ds-released-meta');
        await write('POST', `/v1/datasets/${id}/unrelease`, undefined, 'req-ds-unrelease', 202);
        await settled(id);
        await write('DELETE', `/v1/datasets/${id}`, undefined, 'req-ds-delete');
        assert.equal(await settled(id), null);

        const events = (await eventsOf(id));
        assert.deepEqual(events.map((e) => [e.type, e.objectType, e.actorId, e.requestId]), [
          ['DATASET_CREATED', 'DATASET', adminId, 'req-ds-create'],
          ['DATASET_UPDATED', 'DATASET', adminId, 'req-ds-patch'],
          ['DATASET_STAGED', 'DATASET', adminId, 'req-ds-stage'],
          ['DATASET_UPDATED', 'DATASET', adminId, 'req-ds-ready-meta'],
          ['DATASET_UNSTAGED', 'DATASET', adminId, 'req-ds-unstage'],
          ['DATASET_RELEASED', 'DATASET', adminId, 'req-ds-release'],
          ['DATASET_UPDATED', 'DATASET', adminId, 'req-ds-released-meta'],
          ['DATASET_UNRELEASED', 'DATASET', adminId, 'req-ds-unrelease'],
          ['DATASET_DELETED', 'DATASET', adminId, 'req-ds-delete'],
        ]);
        const [create, patch, stage, , unstage, release, releasedMeta, unrelease, deleted] = events as Json[];
        assert.equal(create!.before, null);
        assert.deepEqual(create!.after, {
          name: created.name, description: 'first', datapoolId: null, openDataAccess: false, dataSetStatus: 'DRAFT',
          namedApis: [{ name: 'Sensors', description: null, slug: 'sensors', standard: 'STA', version: '1.1', upstreamUrl: null }],
        });
        assert.deepEqual([patch!.before.description, patch!.after.description], ['first', 'second']);
        assert.deepEqual([stage!.before.dataSetStatus, stage!.after.dataSetStatus], ['DRAFT', 'READY']);
        assert.deepEqual([unstage!.before.dataSetStatus, unstage!.after.dataSetStatus], ['READY', 'DRAFT']);
        assert.deepEqual([release!.before.dataSetStatus, release!.after.dataSetStatus], ['DRAFT', 'AVAILABLE']);
        assert.deepEqual([releasedMeta!.before.name, releasedMeta!.after.name], [created.name, 'Released name']);
        assert.deepEqual([unrelease!.before.dataSetStatus, unrelease!.after.dataSetStatus], ['AVAILABLE', 'DRAFT']);
        assert.deepEqual([deleted!.before.name, deleted!.after], ['Released name', null]);

        // The body's assignment: created with the dataset, removed by its DELETE saga in the name of the delete request.
        const assignmentEvents = (await page('type=ASSIGNMENT_CREATED&type=ASSIGNMENT_DELETED&size=1000&sort=occurredAt,asc')).content
          .filter((e: Json) => (e.after ?? e.before).scopeId === id);
        assert.deepEqual(assignmentEvents.map((e: Json) => [e.type, e.requestId, e.actorId]), [
          ['ASSIGNMENT_CREATED', 'req-ds-create', adminId],
          ['ASSIGNMENT_DELETED', 'req-ds-delete', adminId],
        ]);
        assert.deepEqual(assignmentEvents[0].after, { groupId: group.id, roleId: consumer.id, scopeType: 'DATASET', scopeId: id });
      });

      it('deleting a never-provisioned dataset records its deletion and its assignments at once', async () => {
        await t.ctx.sagas.stop();
        try {
          const group = await createGroup(t);
          const consumer = await seededRole(t, 'Data Consumer');
          const created = await write('POST', '/v1/datasets', { name: uniqueName('Unprovisioned'), description: 'd', assignments: [{ groupId: group.id, roleId: consumer.id }] }, 'req-raw-create');
          await write('DELETE', `/v1/datasets/${created.id}`, undefined, 'req-raw-delete');
          assert.deepEqual((await eventsOf(created.id)).map((e) => e.type), ['DATASET_CREATED', 'DATASET_DELETED']);
          const removed = (await page('type=ASSIGNMENT_DELETED&size=1000')).content.filter((e: Json) => e.before.scopeId === created.id);
          assert.deepEqual(removed.map((e: Json) => e.requestId), ['req-raw-delete']);
        } finally {
          t.ctx.sagas.start();
        }
      });
    });

    describe('no event without its change', () => {
      it('a refused request writes nothing', async () => {
        const email = uniqueEmail('reader');
        const token = await grant(t, email, ['ASSIGNMENT_READ']);
        const me = (await call('GET', '/v1/users/me', undefined, token)).json();
        const group = await createGroup(t);
        const role = await dataRole(['DATASET_READ']);
        expectProblem(await call('POST', '/v1/assignments', { groupId: group.id, roleId: role.id }, token), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', '/v1/datasets', { name: uniqueName('Refused'), description: 'd' }, token), 403, 'ACCESS_DENIED');
        assert.equal((await page(`actorId=${me.id}`)).totalElements, 0);
      });

      it('a change rolled back after its event was written leaves no event (escalation refused after a delete)', async () => {
        // May write assignments, but holds no DATASET_DELETE: granting Data Owner is an escalation.
        const email = uniqueEmail('writer');
        const token = await grant(t, email, ['GROUP_WRITE', 'GROUP_READ', 'ASSIGNMENT_WRITE', 'ASSIGNMENT_READ', 'DATASET_READ']);
        const me = (await call('GET', '/v1/users/me', undefined, token)).json();
        const group = await createGroup(t);
        const readRole = await dataRole(['DATASET_READ']);
        const existing = await createAssignment(t, { groupId: group.id, roleId: readRole.id });
        const owner = await seededRole(t, 'Data Owner');
        // The stale assignment is deleted (and its event written) before the refused insert.
        expectProblem(await call('PUT', `/v1/groups/${group.id}/assignments`, [{ roleId: owner.id }], token), 403, 'ACCESS_DENIED');
        assert.deepEqual((await eventsOf(existing.id)).map((e) => e.type), ['ASSIGNMENT_CREATED']);
        assert.equal((await call('GET', `/v1/assignments/${existing.id}`)).statusCode, 200);
        assert.equal((await page(`actorId=${me.id}`)).totalElements, 0);
      });

      it('a dataset create failing on its assignments after the DATASET_CREATED event leaves neither', async () => {
        const before = (await page('type=DATASET_CREATED&size=1')).totalElements;
        const response = await call('POST', '/v1/datasets', {
          name: uniqueName('Rolled back'), description: 'd', assignments: [{ groupId: randomUUID(), roleId: randomUUID() }],
        }, t.adminToken, { 'x-request-id': 'req-rolled-back' });
        expectFieldError(response, 'assignments[0].groupId');
        assert.equal((await page('type=DATASET_CREATED&size=1')).totalElements, before);
      });
    });

    describe('the list', () => {
      it('filters by object, actor, type (repeatable) and an inclusive time range, pages newest first, sorts ascending on request', async () => {
        const role = await createRole(t, { permissionIds: await permissionIds(t, ['DATASET_READ']) });
        const steps = [['DATASET_READ', 'DATASET_UPDATE'], ['DATASET_UPDATE'], ['DATASET_UPDATE', 'DATASET_DELETE']];
        for (const [index, names] of steps.entries()) await write('PATCH', `/v1/roles/${role.id}`, { permissionIds: await permissionIds(t, names) }, `req-list-${index}`);
        const all = (await page(`objectId=${role.id}&size=1000`)).content as Json[];
        assert.equal(all.length, 4);
        const times = all.map((e) => Date.parse(e.occurredAt));
        assert.deepEqual(times, [...times].sort((a, b) => b - a), 'newest first by default');
        assert.deepEqual(all[0]!.requestId, 'req-list-2');

        const first = await page(`objectId=${role.id}&size=3`);
        const second = await page(`objectId=${role.id}&size=3&page=1`);
        assert.deepEqual([first.totalElements, first.totalPages, first.numberOfElements, first.first, first.last], [4, 2, 3, true, false]);
        assert.deepEqual([second.numberOfElements, second.last], [1, true]);
        assert.deepEqual([...first.content, ...second.content].map((e: Json) => e.id), all.map((e) => e.id));
        const ascending = (await page(`objectId=${role.id}&sort=occurredAt,asc&size=1000`)).content as Json[];
        assert.deepEqual(ascending.map((e) => e.id), [...all].reverse().map((e) => e.id));

        const middle = ascending[1]!;
        const from = (await page(`objectId=${role.id}&from=${encodeURIComponent(middle.occurredAt)}&size=1000`)).content as Json[];
        assert.deepEqual(sorted(from.map((e) => e.id)), sorted(ascending.slice(1).map((e) => e.id)));
        const to = (await page(`objectId=${role.id}&to=${encodeURIComponent(middle.occurredAt)}&size=1000`)).content as Json[];
        assert.deepEqual(sorted(to.map((e) => e.id)), sorted(ascending.slice(0, 2).map((e) => e.id)));
        const exactly = (await page(`objectId=${role.id}&from=${encodeURIComponent(middle.occurredAt)}&to=${encodeURIComponent(middle.occurredAt)}`)).content as Json[];
        assert.deepEqual(exactly.map((e) => e.id), [middle.id]);

        const user = await createUser(t);
        await write('PUT', `/v1/users/${user.id}/groups`, [(await createGroup(t)).id], 'req-list-user');
        const byTypes = (await page(`actorId=${adminId}&type=ROLE_PERMISSIONS_CHANGED&type=USER_GROUPS_CHANGED&size=1000`)).content as Json[];
        assert.ok(byTypes.every((e) => ['ROLE_PERMISSIONS_CHANGED', 'USER_GROUPS_CHANGED'].includes(e.type) && e.actorId === adminId));
        assert.ok(byTypes.some((e) => e.objectId === user.id) && byTypes.some((e) => e.objectId === role.id));
        assert.equal((await page(`actorId=${randomUUID()}`)).totalElements, 0);
        assert.deepEqual((await page(`id=${middle.id}`)).content.map((e: Json) => e.id), [middle.id]);
      });

      it('refuses bad parameters with 400 naming them', async () => {
        expectFieldError(await call('GET', '/v1/audit-events?type=NOPE'), 'type');
        expectFieldError(await call('GET', '/v1/audit-events?from=yesterday'), 'from');
        expectFieldError(await call('GET', '/v1/audit-events?objectId=42'), 'objectId');
        expectFieldError(await call('GET', '/v1/audit-events?sort=name,asc'), 'sort');
        expectFieldError(await call('GET', '/v1/audit-events?size=1001'), 'size');
      });

      it('needs ASSIGNMENT_READ at TENANT scope (403 otherwise, also with it on a datapool only)', async () => {
        expectProblem(await call('GET', '/v1/audit-events', undefined, await grant(t, uniqueEmail(), ['GROUP_READ', 'ASSIGNMENT_WRITE'])), 403, 'ACCESS_DENIED');
        const pool = await createDatapool(t);
        const onPool = await grant(t, uniqueEmail(), ['ASSIGNMENT_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        expectProblem(await call('GET', '/v1/audit-events', undefined, onPool), 403, 'ACCESS_DENIED');
        const reader = await grant(t, uniqueEmail(), ['ASSIGNMENT_READ']);
        assert.equal((await call('GET', '/v1/audit-events', undefined, reader)).statusCode, 200);
      });
    });

    describe('append-only', () => {
      it('has no write operation, in the API or its document', async () => {
        const [event] = (await page('size=1')).content;
        for (const [method, url] of [['POST', '/v1/audit-events'], ['PUT', `/v1/audit-events/${event.id}`], ['PATCH', `/v1/audit-events/${event.id}`], ['DELETE', `/v1/audit-events/${event.id}`], ['DELETE', '/v1/audit-events']] as const) {
          const response = await call(method, url, method === 'DELETE' ? undefined : {});
          assert.ok(response.statusCode === 403 || response.statusCode === 404 || response.statusCode === 405, `${method} ${url}: ${response.statusCode}`);
        }
        assert.deepEqual((await page(`id=${event.id}`)).content, [event]);
        const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
        assert.deepEqual(Object.keys(doc.paths['/v1/audit-events']), ['get']);
        assert.ok(!Object.keys(doc.paths).some((path) => path.startsWith('/v1/audit-events/')));
      });

      it('the table refuses UPDATE and DELETE (a trigger)', async () => {
        const [event] = (await page('size=1')).content;
        await assert.rejects(sql`update audit_events set type = 'DATASET_DELETED' where id = ${event.id}`.execute(t.ctx.db), /append-only/);
        await assert.rejects(sql`delete from audit_events where id = ${event.id}`.execute(t.ctx.db), /append-only/);
        await assert.rejects(sql`truncate audit_events`.execute(t.ctx.db), /append-only/);
        assert.deepEqual((await page(`id=${event.id}`)).content, [event]);
      });
    });
  });
}
