import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem } from '../helpers/factories.js';
import { datasetParts, sta, type Json } from '../styles/dataset-parts.fixture.js';

/**
 * Issue 17: stage and release compile each pipeline's mapping document (JSONata) and list every
 * fault; pipeline input takes and drops what CIVITAS/CORE clients send (styles, model,
 * persistences); a schedule may be a six-field cron with seconds first.
 */

for (const kind of databaseKinds(import.meta.url)) {
  describe(`pipeline mappings and input (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const { call, ok, newDataset, stage, release } = datasetParts(() => t);
    const pipelinesOf = (datasetId: string) => `/v1/datasets/${datasetId}/pipelines`;
    const mappingsOf = (datasetId: string) => `/v1/datasets/${datasetId}/mappings`;

    /** A DRAFT dataset with an STA API and one pipeline per given mapping document (in order); answers the dataset id and the logical URNs. */
    const datasetWithMappings = async (...documents: Json[]) => {
      const dataset = await newDataset({ namedApis: [sta('sensors')] });
      const urns: string[] = [];
      for (const [index, document] of documents.entries()) {
        const urn = (await ok('POST', mappingsOf(dataset.id), { name: `m${index}`, ...document }, 200)).logicalUrn as string;
        await ok('POST', pipelinesOf(dataset.id), { name: `p${index}`, mappingRef: urn, namedApiSlug: 'sensors' });
        urns.push(urn);
      }
      return { id: dataset.id as string, urns };
    };
    /** The fieldErrors of a 422 at stage, checked to be the same at release, and that the dataset stayed DRAFT. */
    const refused = async (datasetId: string): Promise<{ field: string; message: string }[]> => {
      const staged = expectProblem(await call('POST', `/v1/datasets/${datasetId}/stage`), 422, 'VALIDATION_FAILED');
      const released = expectProblem(await call('POST', `/v1/datasets/${datasetId}/release`), 422, 'VALIDATION_FAILED');
      assert.deepEqual(released.fieldErrors, staged.fieldErrors, 'release finds what stage finds');
      assert.equal((await ok('GET', `/v1/datasets/${datasetId}`)).dataSetStatus, 'DRAFT', 'nothing changed');
      return staged.fieldErrors;
    };

    it('a mapping without a fields object is refused at stage and release (422 on pipelines[i].mappingRef)', async () => {
      for (const document of [{ title: 'no fields' }, { fields: null }, { fields: ['$.value'] }, { fields: '$.value' }]) {
        const { id } = await datasetWithMappings(document);
        assert.deepEqual(await refused(id), [
          { field: 'pipelines[0].mappingRef', message: 'fields: must be an object of target paths and expressions' },
        ], JSON.stringify(document));
      }
    });

    it('an expression that does not compile is refused with its target path and position', async () => {
      const { id } = await datasetWithMappings({ fields: { 'Datastream.name': '$.station', result: '$.value +' } });
      const faults = await refused(id);
      assert.equal(faults.length, 1, JSON.stringify(faults));
      assert.equal(faults[0]!.field, 'pipelines[0].mappingRef');
      assert.match(faults[0]!.message, /^fields\.result: expected an expression at position 9\b/);
    });

    it('a filter that does not compile is refused with its position', async () => {
      const { id } = await datasetWithMappings({ fields: { result: '$.value' }, filter: '$.quality = "good" and (' });
      const faults = await refused(id);
      assert.equal(faults.length, 1, JSON.stringify(faults));
      assert.equal(faults[0]!.field, 'pipelines[0].mappingRef');
      assert.match(faults[0]!.message, /^filter: .* at position 24\b/);
    });

    it('every fault of every pipeline is listed at once, in pipeline order, beside the other checks', async () => {
      const { id } = await datasetWithMappings(
        { fields: { result: '$.value +', 'Datastream.name': 'foo(', phenomenonTime: 42, 'Datastream.@iot.id': '$.ds' }, filter: '"open' },
        { fields: { result: '$.value' }, filter: '$.ok' },
      );
      // A third pipeline naming a mapping that does not exist: the existing check still speaks.
      await ok('POST', pipelinesOf(id), { name: 'p2', mappingRef: `urn:platform:mapping:${id}:ghost`, namedApiSlug: 'nope' });
      const faults = await refused(id);
      assert.deepEqual(faults.map((f) => f.field), [
        'pipelines[0].mappingRef', 'pipelines[0].mappingRef', 'pipelines[0].mappingRef', 'pipelines[0].mappingRef',
        'pipelines[2].mappingRef', 'pipelines[2].namedApiSlug',
      ], JSON.stringify(faults));
      // The database keeps a document's members in its own order (jsonb): the faults of one mapping come in any order.
      const first = faults.slice(0, 4).map((f) => f.message).sort();
      assert.match(first[0]!, /^fields\.Datastream\.name: expected "\)" before end of expression at position 4\b/);
      assert.equal(first[1], 'fields.phenomenonTime: must be a string holding a JSONata expression');
      assert.match(first[2]!, /^fields\.result: expected an expression at position 9\b/);
      assert.match(first[3]!, /^filter: string literal must be terminated by a matching quote at position 5\b/);
      assert.match(faults[4]!.message, /names no mapping of this dataset/);
    });

    it('pipelines sharing a broken mapping each get its faults', async () => {
      const dataset = await newDataset({ namedApis: [sta('sensors')] });
      const urn = (await ok('POST', mappingsOf(dataset.id), { name: 'shared', fields: { result: '$.a ++' } }, 200)).logicalUrn as string;
      for (const name of ['a', 'b']) await ok('POST', pipelinesOf(dataset.id), { name, mappingRef: urn, namedApiSlug: 'sensors' });
      const faults = await refused(dataset.id);
      assert.deepEqual(faults.map((f) => f.field), ['pipelines[0].mappingRef', 'pipelines[1].mappingRef']);
      assert.equal(faults[0]!.message, faults[1]!.message);
      assert.match(faults[0]!.message, /^fields\.result: /);
    });

    it('a logical URN is checked at its latest version, a versioned URN at that version', async () => {
      const dataset = await newDataset({ namedApis: [sta('sensors')] });
      const logical = (await ok('POST', mappingsOf(dataset.id), { name: 'm', fields: { result: '$.value' } }, 200)).logicalUrn as string;
      await ok('PUT', mappingsOf(dataset.id), { logicalUrn: logical, fields: { result: '$.value *' } }, 200);
      const pipeline = await ok('POST', pipelinesOf(dataset.id), { name: 'p', mappingRef: logical, namedApiSlug: 'sensors' });
      const faults = await refused(dataset.id);
      assert.equal(faults.length, 1);
      assert.match(faults[0]!.message, /^fields\.result: expected an expression at position 9\b/, 'version 2 (the latest) is broken');
      await ok('PATCH', `${pipelinesOf(dataset.id)}/${pipeline.id}`, { mappingRef: `${logical}:1` });
      assert.equal((await stage(dataset.id)).dataSetStatus, 'READY', 'version 1 compiles');
    });

    it('an expression longer or more deeply nested than the bounds is refused with a message, the same on every call', async () => {
      const long = `$.a${' + $.a'.repeat(2000)}`;
      const deep = `${'('.repeat(2000)}1${')'.repeat(2000)}`; // within the byte bound; JSONata's parser would exhaust the stack on it
      const { id } = await datasetWithMappings({
        fields: {
          result: long, 'parameters.deep': deep,
          'parameters.nested': `${'('.repeat(64)}1${')'.repeat(64)}`, // at the bound: compiles
          'parameters.quoted': `"${'('.repeat(3000)}" & '[[[' & \`{{{\``, // brackets in strings and names do not nest
        },
      });
      for (let round = 0; round < 3; round++) {
        const faults = (await refused(id)).map((f) => f.message).sort();
        assert.deepEqual(faults, [
          'fields.parameters.deep: nests brackets more than 64 deep at position 65; an expression may nest at most 64',
          'fields.result: is 12003 bytes long; an expression may have at most 4096',
        ]);
      }
    });

    it('a mapping that compiles stages and releases; members other than fields and filter are ignored', async () => {
      const { id } = await datasetWithMappings({
        title: 'Weather', source: 'mqtt', target: 'sta', extra: { anything: [1, 2] },
        fields: {
          '$.Datastream.name': '$.station_id & "-temperature"',
          'Datastream.@iot.id': '$.datastream',
          'Datastream.unitOfMeasurement': '{"name": "degree Celsius", "symbol": "°C", "definition": "ucum:Cel"}',
          result: '$number($.temperature)',
          phenomenonTime: '$.time ? $.time : $receivedAt',
          parameters: '{"topic": $topic, "source": $dataSource.name}',
        },
        filter: '$exists($.temperature) and $.quality != "bad"',
      }, { fields: { result: '$.value' }, filter: null });
      assert.equal((await stage(id)).dataSetStatus, 'READY');
      await ok('POST', `/v1/datasets/${id}/unstage`, undefined, 200);
      assert.equal((await release(id)).dataSetStatus, 'AVAILABLE');
    });

    it('pipeline input takes styles, model and persistences (any JSON) and never stores nor answers them', async () => {
      const dataset = await newDataset({ namedApis: [sta('sensors')] });
      const civitas = {
        styles: [{ id: 'x', css: 'a {}' }],
        model: { nodes: [{ id: 'n1', type: 'mqtt', position: { x: 1, y: 2 } }], edges: [] },
        persistences: [{ type: 'STA', config: { url: 'http://example.test' } }],
      };
      const absent = (body: Json, how: string) => {
        for (const member of ['styles', 'model', 'persistences']) assert.equal(member in body, false, `${how}: ${member} is not answered`);
      };
      const created = await ok('POST', pipelinesOf(dataset.id), { name: 'From CIVITAS', ...civitas });
      absent(created, 'create');
      const item = `${pipelinesOf(dataset.id)}/${created.id}`;
      absent(await ok('PUT', item, { name: 'Replaced', styles: null, model: 'a string', persistences: 7 }), 'PUT');
      const patched = await ok('PATCH', item, { model: [true, { deep: { er: null } }], description: 'patched' });
      absent(patched, 'PATCH');
      assert.equal(patched.description, 'patched', 'the other members of the same body apply');
      const read = await ok('GET', item);
      absent(read, 'GET');
      assert.equal(read.name, 'Replaced');
      const listed = await ok('GET', pipelinesOf(dataset.id));
      absent(listed.content[0], 'list');
      // Another unknown member is still refused: only these three are taken.
      expectProblem(await call('POST', pipelinesOf(dataset.id), { name: 'x', stylez: [] }), 400, 'VALIDATION_FAILED');
    });

    it('schedule: six fields with seconds first are accepted; bad seconds and other counts are refused naming the field', async () => {
      const dataset = await newDataset();
      for (const schedule of ['*/10 * * * * *', '0 0 3 * * MON-FRI', '59 59 23 31 DEC 7', '0,30 */5 * * * *']) {
        const created = await call('POST', pipelinesOf(dataset.id), { name: 'p', schedule });
        assert.equal(created.statusCode, 201, `${schedule}: ${created.body}`);
        assert.equal(created.json().schedule, schedule);
      }
      for (const [schedule, field] of [
        ['60 * * * * *', /second field has "60"/], ['*/0 * * * * *', /second field has "\*\/0"/], ['x * * * * *', /second field has "x"/],
        ['0 60 * * * *', /minute field/], ['0 0 24 * * *', /hour field/],
        ['* * * * * * *', /5 fields .* or 6 .*not 7/], ['* * * *', /not 4/],
      ] as const) {
        const body = expectFieldError(await call('POST', pipelinesOf(dataset.id), { name: 'p', schedule }), 'schedule');
        assert.match(body.fieldErrors.find((e: Json) => e.field === 'schedule').message, field, schedule);
      }
      const pipeline = await ok('POST', pipelinesOf(dataset.id), { name: 'p' });
      assert.equal((await ok('PATCH', `${pipelinesOf(dataset.id)}/${pipeline.id}`, { schedule: '30 0 * * * *' })).schedule, '30 0 * * * *');
      expectFieldError(await call('PUT', `${pipelinesOf(dataset.id)}/${pipeline.id}`, { name: 'p', schedule: '61 0 * * * *' }), 'schedule');
    });
  });
}
