import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { requestsOf } from '../helpers/requests.js';
import { CHECK_VIOLATION } from '../helpers/sql-states.js';
import { openedSourceConfiguration } from '../../src/modules/datasources/index.js';
import {
  createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem, grant, permissionIds, uniqueEmail, uniqueName,
} from '../helpers/factories.js';

/** /v1/datasources: typed configuration, secrets, release rules, references, authorization, assignments. */

type Json = Record<string, any>;
const MASK = '********';

const DEFAULTS: Record<string, Json> = {
  MQTT: { urls: null, topics: null, qos: null, keepalive: null, connect_timeout: null, client_id: null, user: null, password: null, tls: { enabled: false } },
  SQL: {
    driver: null, dsn: null, table: null, columns: null, where: null, prefix: null, suffix: null, init_statement: null, user: null, password: null,
    conn_max_idle_time: null, conn_max_life_time: null, conn_max_idle: 2, conn_max_open: 0, cursor_column: null,
  },
  HTTP: { url: null, method: 'GET', headers: {}, interval: '60s', records_pointer: null, user: null, password: null },
};

for (const kind of databaseKinds(import.meta.url)) {
  describe(`data sources (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const { call, ok, deleted } = requestsOf(() => t);
    const newSource = (fields: Json = {}, token = t.adminToken) => ok('POST', '/v1/datasources', { name: uniqueName('Source'), connectorType: 'MQTT', ...fields }, 201, token);
    const stored = async (id: string) =>
      (await t.ctx.db.selectFrom('data_sources').select('configuration').where('id', '=', id).executeTakeFirstOrThrow()).configuration as Json;
    /** The stored configuration with its secrets opened, as the pipeline runtime reads it (they are stored sealed). */
    const opened = async (id: string) => (await openedSourceConfiguration(t.ctx.db, t.ctx.secrets, id))!.configuration as Json;
    /** An AVAILABLE version of an AVAILABLE structure (optionally in a datapool). */
    const availableVersion = async (datapoolId?: string) => {
      const structure = await ok('POST', '/v1/datastructures', { name: uniqueName('Structure'), ...(datapoolId ? { datapoolId } : {}) });
      const version = await ok('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
      await ok('POST', `/v1/datastructures/${structure.id}/versions/${version.id}/release`);
      await ok('POST', `/v1/datastructures/${structure.id}/release`);
      return { structure, version };
    };

    describe('configuration', () => {
      it('reads back every member of its connector, defaults for those not given, for a configuration left out, null or {}', async () => {
        for (const connectorType of ['MQTT', 'SQL', 'HTTP']) {
          for (const configuration of [undefined, null, {}]) {
            const response = await call('POST', '/v1/datasources', { name: uniqueName('S'), connectorType, ...(configuration === undefined ? {} : { configuration }) });
            assert.equal(response.statusCode, 201, response.body);
            const source = response.json();
            assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datasources/${source.id}`);
            assert.deepEqual(source.configuration, DEFAULTS[connectorType], connectorType);
            assert.deepEqual(
              [source.description, source.dataStructureVersion, source.datapoolScope, source.dataSourceStatus, source.inUse],
              [null, null, { type: 'ALL', datapoolIds: [] }, 'DRAFT', false],
            );
          }
        }
        const given = await newSource({ configuration: { urls: ['tcp://broker:1883'], topics: ['city/+/air'], qos: 1, keepalive: '30s', connect_timeout: '1h30m', tls: { enabled: true } } });
        assert.deepEqual(given.configuration, { ...DEFAULTS['MQTT'], urls: ['tcp://broker:1883'], topics: ['city/+/air'], qos: 1, keepalive: '30s', connect_timeout: '1h30m', tls: { enabled: true } });
        assert.deepEqual(await ok('GET', `/v1/datasources/${given.id}`), given);
      });

      it('drops members its connector does not have (another connector\'s, a misspelling), inside configuration only', async () => {
        const source = await newSource({ connectorType: 'HTTP', configuration: { url: 'https://example.com/api', qos: 1, dsn: 'x', intervall: '5m' } });
        assert.deepEqual(source.configuration, { ...DEFAULTS['HTTP'], url: 'https://example.com/api' });
        assert.deepEqual(await stored(source.id), { url: 'https://example.com/api' });
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'HTTP', configurationn: {} }), 'configurationn');
      });

      it('refuses a member of the wrong type or out of range, naming it', async () => {
        const cases: Array<[string, Json, string]> = [
          ['MQTT', { qos: 3 }, 'configuration.qos'],
          ['MQTT', { qos: '1' }, 'configuration.qos'],
          ['MQTT', { urls: 'tcp://broker:1883' }, 'configuration.urls'],
          ['MQTT', { topics: [1] }, 'configuration.topics'],
          ['MQTT', { keepalive: '30 seconds' }, 'configuration.keepalive'],
          ['MQTT', { tls: true }, 'configuration.tls'],
          ['MQTT', { client_id: 7 }, 'configuration.client_id'],
          ['SQL', { conn_max_idle: -1 }, 'configuration.conn_max_idle'],
          ['SQL', { conn_max_open: 1.5 }, 'configuration.conn_max_open'],
          ['SQL', { columns: 'a,b' }, 'configuration.columns'],
          ['SQL', { conn_max_life_time: 5 }, 'configuration.conn_max_life_time'],
          ['HTTP', { url: 'ftp://example.com/x' }, 'configuration.url'],
          ['HTTP', { url: '/relative' }, 'configuration.url'],
          ['HTTP', { interval: '500ms' }, 'configuration.interval'],
          ['HTTP', { interval: 60 }, 'configuration.interval'],
          ['HTTP', { records_pointer: 'data/items' }, 'configuration.records_pointer'],
          ['HTTP', { method: 'POST' }, 'configuration.method'],
          ['HTTP', { headers: { 'X-A': 1 } }, 'configuration.headers'],
          ['HTTP', { password: 5 }, 'configuration.password'],
        ];
        for (const [connectorType, configuration, field] of cases) {
          expectFieldError(await call('POST', '/v1/datasources', { name: uniqueName('S'), connectorType, configuration }), field);
        }
        const both = expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', configuration: { qos: 5, keepalive: 'soon' } }), 'configuration.qos');
        assert.ok(both.fieldErrors.some((e: Json) => e.field === 'configuration.keepalive'));
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', configuration: 'qos=1' }), 'configuration');
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'KAFKA' }), 'connectorType');
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x' }), 'connectorType');
        expectFieldError(await call('POST', '/v1/datasources', { connectorType: 'SQL' }), 'name');
        const fine = await newSource({ connectorType: 'HTTP', configuration: { interval: '1s', records_pointer: '/data/items~1x', url: 'http://h:8080/p?q=1' } });
        assert.deepEqual([fine.configuration.interval, fine.configuration.records_pointer], ['1s', '/data/items~1x']);
        assert.equal((await newSource({ connectorType: 'HTTP', configuration: { records_pointer: '' } })).configuration.records_pointer, '');
      });

      it('masks secrets in every answer, keeps them when written as ********, replaces and removes them', async () => {
        const source = await newSource({ connectorType: 'HTTP', configuration: {
          url: 'https://example.com', user: 'u', password: 'p1',
          headers: { Authorization: 'Bearer xyz', 'X-Api-Key': 'k1', Accept: 'application/json', 'x-auth-token': 't' },
        } });
        assert.equal(source.configuration.password, MASK);
        assert.deepEqual(source.configuration.headers, { Authorization: MASK, 'X-Api-Key': MASK, Accept: 'application/json', 'x-auth-token': MASK });
        const listed = (await ok('GET', `/v1/datasources?id=${source.id}`)).content[0];
        assert.equal(listed.configuration.password, MASK);
        assert.equal(listed.configuration.headers.Authorization, MASK);
        assert.doesNotMatch(JSON.stringify(listed), /p1|xyz|k1/);

        // Written back as read: the stored secrets stay.
        await ok('PUT', `/v1/datasources/${source.id}`, { name: source.name, connectorType: 'HTTP', configuration: source.configuration });
        assert.deepEqual(await opened(source.id), {
          url: 'https://example.com', method: 'GET', interval: '60s', user: 'u', password: 'p1',
          headers: { Authorization: 'Bearer xyz', 'X-Api-Key': 'k1', Accept: 'application/json', 'x-auth-token': 't' },
        });
        await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: { password: 'p2' } });
        assert.equal((await opened(source.id))['password'], 'p2');
        await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: { password: null } });
        assert.equal((await opened(source.id))['password'], undefined);
        assert.equal((await ok('GET', `/v1/datasources/${source.id}`)).configuration.password, null);
        // None stays none.
        const none = await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: { password: MASK } });
        assert.equal(none.configuration.password, null);
        await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: { password: 'p3' } });
        // Left out of a PUT: removed.
        const put = await ok('PUT', `/v1/datasources/${source.id}`, { name: source.name, connectorType: 'HTTP', configuration: { url: 'https://example.com' } });
        assert.deepEqual([put.configuration.password, put.configuration.headers], [null, {}]);
        assert.equal((await opened(source.id))['password'], undefined);
      });

      it('takes credentials out of a SQL dsn and fills user and password where not given', async () => {
        const source = await newSource({ connectorType: 'SQL', configuration: { driver: 'postgres', dsn: 'postgres://reader:s%40cret@db.example:5432/city?sslmode=require' } });
        assert.deepEqual([source.configuration.dsn, source.configuration.user, source.configuration.password], ['postgres://db.example:5432/city?sslmode=require', 'reader', MASK]);
        assert.deepEqual([(await opened(source.id))['password'], (await opened(source.id))['user']], ['s@cret', 'reader']);
        const given = await newSource({ connectorType: 'SQL', configuration: { dsn: 'postgres://a:b@h/db', user: 'explicit', password: 'pw' } });
        assert.equal(given.configuration.dsn, 'postgres://h/db');
        assert.deepEqual([(await opened(given.id))['user'], (await opened(given.id))['password']], ['explicit', 'pw']);
        const plain = await newSource({ connectorType: 'SQL', configuration: { dsn: 'postgres://h/db', conn_max_idle: 0, conn_max_open: 10, conn_max_idle_time: '5m' } });
        assert.deepEqual([plain.configuration.dsn, plain.configuration.user, plain.configuration.conn_max_idle, plain.configuration.conn_max_open, plain.configuration.conn_max_idle_time],
          ['postgres://h/db', null, 0, 10, '5m']);
      });

      it('PATCH merges configuration member by member (null resets to the default); a changed connectorType starts from its defaults', async () => {
        const source = await newSource({ configuration: { urls: ['tcp://a:1883'], topics: ['x'], qos: 2, password: 'secret', tls: { enabled: true } } });
        const patched = await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: { topics: ['y', 'z'], qos: null, tls: null, dsn: 'ignored' } });
        assert.deepEqual(patched.configuration, { ...DEFAULTS['MQTT'], urls: ['tcp://a:1883'], topics: ['y', 'z'], password: MASK });
        const switched = await ok('PATCH', `/v1/datasources/${source.id}`, { connectorType: 'HTTP', configuration: { url: 'https://example.com', password: MASK } });
        assert.deepEqual(switched.configuration, { ...DEFAULTS['HTTP'], url: 'https://example.com' });
        const reset = await ok('PATCH', `/v1/datasources/${source.id}`, { configuration: null });
        assert.deepEqual(reset.configuration, DEFAULTS['HTTP']);
        const put = await ok('PUT', `/v1/datasources/${source.id}`, { name: 'renamed', connectorType: 'SQL' });
        assert.deepEqual([put.name, put.description, put.configuration], ['renamed', null, DEFAULTS['SQL']]);
      });
    });

    describe('references and release', () => {
      it('dataStructureVersionId must name an AVAILABLE version of an AVAILABLE structure the caller may read', async () => {
        const structure = await ok('POST', '/v1/datastructures', { name: uniqueName('Structure') });
        const draft = await ok('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', dataStructureVersionId: draft.id }), 'dataStructureVersionId');
        await ok('POST', `/v1/datastructures/${structure.id}/versions/${draft.id}/release`);
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', dataStructureVersionId: draft.id }), 'dataStructureVersionId');
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', dataStructureVersionId: randomUUID() }), 'dataStructureVersionId');
        await ok('POST', `/v1/datastructures/${structure.id}/release`);
        const source = await newSource({ dataStructureVersionId: draft.id });
        assert.deepEqual([source.dataStructureVersion.id, source.dataStructureVersion.dataStructureId, source.dataStructureVersion.status], [draft.id, structure.id, 'AVAILABLE']);

        // A caller who may write data sources but not read that structure cannot name its version.
        const writer = await grant(t, uniqueEmail('writer'), ['DATASOURCE_READ', 'DATASOURCE_WRITE']);
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', dataStructureVersionId: draft.id }, writer), 'dataStructureVersionId');
      });

      it('a referenced version or structure cannot be deleted or unreleased (409 RESOURCE_IN_USE, before the status rules)', async () => {
        const { structure, version } = await availableVersion();
        const source = await newSource({ dataStructureVersionId: version.id });
        assert.equal((await ok('GET', `/v1/datastructures/${structure.id}`)).inUse, true);
        assert.equal((await ok('GET', `/v1/datastructures/${structure.id}/versions/${version.id}`)).inUse, true);
        expectProblem(await call('POST', `/v1/datastructures/${structure.id}/versions/${version.id}/unrelease`), 409, 'RESOURCE_IN_USE');
        expectProblem(await call('DELETE', `/v1/datastructures/${structure.id}/versions/${version.id}`), 409, 'RESOURCE_IN_USE');
        expectProblem(await call('POST', `/v1/datastructures/${structure.id}/unrelease`), 409, 'RESOURCE_IN_USE');
        expectProblem(await call('DELETE', `/v1/datastructures/${structure.id}`), 409, 'RESOURCE_IN_USE');
        await ok('PATCH', `/v1/datasources/${source.id}`, { dataStructureVersionId: null });
        assert.equal((await ok('GET', `/v1/datastructures/${structure.id}`)).inUse, false);
        await ok('POST', `/v1/datastructures/${structure.id}/unrelease`);
      });

      it('release lists every deferred problem at once; status refusals name dataSourceStatus; released/meta merges name and description', async () => {
        const source = await newSource({ connectorType: 'SQL', configuration: { driver: 'postgres', columns: [] } });
        const url = `/v1/datasources/${source.id}`;
        const problem = expectFieldError(await call('POST', `${url}/release`), 'dataStructureVersionId');
        assert.deepEqual(problem.fieldErrors.map((e: Json) => e.field).sort(), ['configuration.columns', 'configuration.dsn', 'configuration.table', 'dataStructureVersionId']);
        const mqtt = expectFieldError(await call('POST', `/v1/datasources/${(await newSource()).id}/release`), 'configuration.urls');
        assert.deepEqual(mqtt.fieldErrors.map((e: Json) => e.field).sort(), ['configuration.qos', 'configuration.topics', 'configuration.urls', 'dataStructureVersionId']);
        const http = expectFieldError(await call('POST', `/v1/datasources/${(await newSource({ connectorType: 'HTTP' })).id}/release`), 'configuration.url');
        assert.equal(http.fieldErrors.length, 2);

        expectFieldError(await call('POST', `${url}/unrelease`), 'dataSourceStatus');
        expectFieldError(await call('PATCH', `${url}/released/meta`, { name: 'x' }), 'dataSourceStatus');
        const { version } = await availableVersion();
        await ok('PATCH', url, { dataStructureVersionId: version.id, configuration: { dsn: 'postgres://h/db', table: 'readings', columns: ['a'] } });
        const releasedSource = await ok('POST', `${url}/release`);
        assert.equal(releasedSource.dataSourceStatus, 'AVAILABLE');
        expectFieldError(await call('POST', `${url}/release`), 'dataSourceStatus');
        expectFieldError(await call('PUT', url, { name: 'x', connectorType: 'SQL' }), 'dataSourceStatus');
        expectFieldError(await call('PATCH', url, { name: 'x' }), 'dataSourceStatus');
        expectFieldError(await call('DELETE', url), 'dataSourceStatus');
        const meta = await ok('PUT', `${url}/released/meta`, { description: 'described' });
        assert.deepEqual([meta.name, meta.description, meta.configuration.table], [source.name, 'described', 'readings']);
        expectFieldError(await call('PATCH', `${url}/released/meta`, { configuration: {} }), 'configuration');
        assert.equal((await call('POST', `${url}/publish`)).statusCode, 403);
        assert.equal((await ok('POST', `${url}/unrelease`)).dataSourceStatus, 'DRAFT');
        await deleted(url);
      });

      it('a data source a pipeline reads from is inUse and cannot be deleted (409 RESOURCE_IN_USE)', async () => {
        const source = await newSource();
        const datasetId = randomUUID();
        // The pipelines API belongs to another module; the reference is written as it stores it.
        await t.ctx.db.insertInto('datasets').values({ id: datasetId, name: uniqueName('Dataset'), description: 'd', datapool_id: null, created_by: null, pending_saga_type: null }).execute();
        await t.ctx.db.insertInto('pipelines').values({ id: randomUUID(), dataset_id: datasetId, name: 'ingest', data_source_ids: [source.id] }).execute();
        assert.equal((await ok('GET', `/v1/datasources/${source.id}`)).inUse, true);
        const problem = expectProblem(await call('DELETE', `/v1/datasources/${source.id}`), 409, 'RESOURCE_IN_USE');
        assert.match(problem.detail, /ingest/);
        // 409 comes before the status rule: an AVAILABLE data source in use answers it too.
        const { version } = await availableVersion();
        await ok('PATCH', `/v1/datasources/${source.id}`, { dataStructureVersionId: version.id, configuration: { urls: ['tcp://b:1883'], topics: ['t'], qos: 0 } });
        await ok('POST', `/v1/datasources/${source.id}/release`);
        expectProblem(await call('DELETE', `/v1/datasources/${source.id}`), 409, 'RESOURCE_IN_USE');
        await t.ctx.db.deleteFrom('datasets').where('id', '=', datasetId).execute();
        expectFieldError(await call('DELETE', `/v1/datasources/${source.id}`), 'dataSourceStatus');
        await ok('POST', `/v1/datasources/${source.id}/unrelease`);
        await deleted(`/v1/datasources/${source.id}`);
      });
    });

    describe('datapools, authorization and assignments', () => {
      it('datapoolScope: ALL when omitted, SPECIFIC needs existing datapools, others none; list filters', async () => {
        const pool = await createDatapool(t);
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', datapoolScope: { type: 'SPECIFIC', datapoolIds: [] } }), 'datapoolScope.datapoolIds');
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', datapoolScope: { type: 'SPECIFIC', datapoolIds: [randomUUID()] } }), 'datapoolScope.datapoolIds');
        expectFieldError(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', datapoolScope: { type: 'NONE', datapoolIds: [pool.id] } }), 'datapoolScope.datapoolIds');
        const specific = await newSource({ connectorType: 'HTTP', datapoolScope: { type: 'SPECIFIC', datapoolIds: [pool.id] } });
        assert.deepEqual(specific.datapoolScope, { type: 'SPECIFIC', datapoolIds: [pool.id] });
        const none = await newSource({ datapoolScope: { type: 'NONE' } });
        const all = await newSource();
        const inPool = (await ok('GET', `/v1/datasources?datapoolId=${pool.id}&size=1000`)).content.map((s: Json) => s.id);
        assert.ok(inPool.includes(specific.id) && inPool.includes(all.id) && !inPool.includes(none.id));
        const specificOnly = await ok('GET', `/v1/datasources?datapoolScopeType=SPECIFIC&connectorType=HTTP&dataSourceStatus=DRAFT&q=${encodeURIComponent(specific.name)}`);
        assert.deepEqual([specificOnly.totalElements, specificOnly.content[0].id], [1, specific.id]);
        // Deleting a datapool a SPECIFIC scope names drops it from the scope.
        await deleted(`/v1/datapools/${pool.id}`);
        assert.deepEqual((await ok('GET', `/v1/datasources/${specific.id}`)).datapoolScope, { type: 'SPECIFIC', datapoolIds: [] });
      });

      it('reads need DATASOURCE_READ (else 404), writes DATASOURCE_WRITE (else 403), on the source, a datapool it lies in, or the tenant; lists filtered in SQL', async () => {
        const pool = await createDatapool(t);
        const other = await createDatapool(t);
        const inPool = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [other.id, pool.id] } });
        const elsewhere = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [other.id] } });
        const everywhere = await newSource();
        const reader = await grant(t, uniqueEmail('reader'), ['DATASOURCE_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        const page = await ok('GET', '/v1/datasources?size=1000', undefined, 200, reader);
        assert.deepEqual([page.totalElements, page.content.map((s: Json) => s.id)], [1, [inPool.id]]);
        await ok('GET', `/v1/datasources/${inPool.id}`, undefined, 200, reader);
        await ok('GET', `/v1/datasources/${inPool.id}/assignments`, undefined, 200, reader);
        for (const id of [elsewhere.id, everywhere.id]) {
          expectProblem(await call('GET', `/v1/datasources/${id}`, undefined, reader), 404, 'NOT_FOUND');
          expectProblem(await call('PATCH', `/v1/datasources/${id}`, { name: 'x' }, reader), 404, 'NOT_FOUND');
          expectProblem(await call('DELETE', `/v1/datasources/${id}`, undefined, reader), 404, 'NOT_FOUND');
        }
        expectProblem(await call('PATCH', `/v1/datasources/${inPool.id}`, { name: 'x' }, reader), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', `/v1/datasources/${inPool.id}/release`, undefined, reader), 403, 'ACCESS_DENIED');
        expectProblem(await call('DELETE', `/v1/datasources/${inPool.id}`, undefined, reader), 403, 'ACCESS_DENIED');

        const writer = await grant(t, uniqueEmail('writer'), ['DATASOURCE_READ', 'DATASOURCE_WRITE'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        const own = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [pool.id] } }, writer);
        await ok('PATCH', `/v1/datasources/${inPool.id}`, { description: 'changed by the pool writer' }, 200, writer);
        expectProblem(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT' }, writer), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', '/v1/datasources', { name: 'x', connectorType: 'MQTT', datapoolScope: { type: 'SPECIFIC', datapoolIds: [pool.id, other.id] } }, writer), 403, 'ACCESS_DENIED');
        expectProblem(await call('PATCH', `/v1/datasources/${own.id}`, { datapoolScope: { type: 'ALL' } }, writer), 403, 'ACCESS_DENIED');
        const response = await call('DELETE', `/v1/datasources/${own.id}`, undefined, writer);
        assert.equal(response.statusCode, 204, response.body);

        // An assignment on the data source itself covers only it.
        const single = await grant(t, uniqueEmail('single'), ['DATASOURCE_READ'], { scopeType: 'DATASOURCE', scopeId: everywhere.id });
        const singlePage = await ok('GET', '/v1/datasources?size=1000', undefined, 200, single);
        assert.deepEqual([singlePage.totalElements, singlePage.content[0].id], [1, everywhere.id]);
      });

      it('assignments in the body are scoped to the data source and go with it (a database guarantee)', async () => {
        const role = await createRole(t, { permissionIds: await permissionIds(t, ['DATASOURCE_READ']) });
        const group = await createGroup(t);
        const source = await newSource({ assignments: [{ groupId: group.id, roleId: role.id }] });
        const assignments = await ok('GET', `/v1/datasources/${source.id}/assignments`);
        assert.deepEqual([assignments.length, assignments[0].scopeType, assignments[0].scope], [1, 'DATASOURCE', { id: source.id, name: source.name }]);
        const listed = await ok('GET', `/v1/assignments?scopeId=${source.id}`);
        assert.equal(listed.totalElements, 1);
        // The check constraint refuses an assignment whose foreign key is not the one of its type.
        await assert.rejects(sql`insert into assignments (id, group_id, role_id, scope_type, scope_id, datastructure_id)
          values (${randomUUID()}, ${group.id}, ${role.id}, 'DATASOURCE', ${source.id}, null)`.execute(t.ctx.db),
        (error: { code?: string }) => error.code === CHECK_VIOLATION);
        await deleted(`/v1/datasources/${source.id}`);
        assert.equal((await t.ctx.db.selectFrom('assignments').select('id').where('scope_id', '=', source.id).execute()).length, 0);
        // And a direct delete in SQL takes them too: the foreign key cascades.
        const again = await newSource({ assignments: [{ groupId: group.id, roleId: role.id }] });
        await t.ctx.db.deleteFrom('data_sources').where('id', '=', again.id).execute();
        assert.equal((await t.ctx.db.selectFrom('assignments').select('id').where('scope_id', '=', again.id).execute()).length, 0);
      });

      it('escalation: a pool writer cannot assign on a data source a role with permissions they hold nowhere covering it', async () => {
        const pool = await createDatapool(t);
        const writer = await grant(t, uniqueEmail('pw'), ['DATASOURCE_READ', 'DATASOURCE_WRITE', 'DATASET_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        const group = await createGroup(t);
        const covered = await createRole(t, { permissionIds: await permissionIds(t, ['DATASOURCE_READ']) });
        const beyond = await createRole(t, { permissionIds: await permissionIds(t, ['DATASET_DELETE']) });
        const source = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [pool.id] }, assignments: [{ groupId: group.id, roleId: covered.id }] }, writer);
        expectProblem(await call('PATCH', `/v1/datasources/${source.id}`, { assignments: [{ groupId: group.id, roleId: beyond.id }] }, writer), 403, 'ACCESS_DENIED');
        assert.equal((await ok('GET', `/v1/datasources/${source.id}/assignments`)).length, 1);
      });

      it('escalation: adding a member to a group holding a data source grant is covered by a grant on a datapool the source lies in', async () => {
        const [pool, other] = [await createDatapool(t), await createDatapool(t)];
        const inPool = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [other.id, pool.id] } });
        const outside = await newSource({ datapoolScope: { type: 'SPECIFIC', datapoolIds: [other.id] } });
        // The caller: GROUP_READ/GROUP_WRITE tenant-wide, DATASOURCE_READ on `pool` only.
        const email = uniqueEmail('groups');
        const me = await createUser(t, { email });
        const mine = await createGroup(t, { memberIds: [me.id] });
        await createAssignment(t, { groupId: mine.id, roleId: (await createRole(t, { roleType: 'SYSTEM', permissionIds: await permissionIds(t, ['GROUP_READ', 'GROUP_WRITE']) })).id });
        const reader = await createRole(t, { permissionIds: await permissionIds(t, ['DATASOURCE_READ']) });
        await createAssignment(t, { groupId: mine.id, roleId: reader.id, scopeType: 'DATAPOOL', scopeId: pool.id });
        const token = await t.tokenFor(email);
        const newcomer = await createUser(t);
        const covered = await createGroup(t);
        await createAssignment(t, { groupId: covered.id, roleId: reader.id, scopeType: 'DATASOURCE', scopeId: inPool.id });
        await ok('PATCH', `/v1/groups/${covered.id}`, { memberIds: [newcomer.id] }, 200, token);
        const uncovered = await createGroup(t);
        await createAssignment(t, { groupId: uncovered.id, roleId: reader.id, scopeType: 'DATASOURCE', scopeId: outside.id });
        const refused = expectProblem(await call('PATCH', `/v1/groups/${uncovered.id}`, { memberIds: [newcomer.id] }, token), 403, 'ACCESS_DENIED');
        assert.deepEqual(refused.missingPermissions, [{ permission: 'DATASOURCE_READ', scopeType: 'DATASOURCE', scopeId: outside.id }]);
      });
    });
  });
}
