import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { validatorCompiler } from '../../src/http/validation.js';
import { installProblemHandlers } from '../../src/http/problems.js';
import { Nullable, Uuid } from '../../src/http/schemas.js';

// Validation messages about null: an explicit null where none is allowed says "must not be null";
// a field that admits null gets one message for a wrong value, never one per schema branch.
describe('validation messages for null', () => {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    installProblemHandlers(app);
    const body = Type.Object({
      name: Type.Optional(Type.String({ minLength: 1 })),
      count: Type.Optional(Type.Integer()),
      kind: Type.Optional(Type.Enum(['A', 'B'])),
      parentId: Type.Optional(Nullable(Uuid)),
      label: Type.Optional(Nullable(Type.String({ maxLength: 3 }))),
      mode: Type.Optional(Nullable(Type.Enum(['X', 'Y']))),
      legacyRef: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()])),
      tags: Type.Optional(Type.Array(Type.String())),
      nested: Type.Optional(Type.Union([Type.Object({ a: Type.String() }, { additionalProperties: false }), Type.Null()])),
    }, { additionalProperties: false });
    app.post('/things', { schema: { body } }, async (request) => request.body);
    await app.ready();
  });
  after(() => app.close());

  const fieldErrorsOf = async (payload: unknown) => {
    const response = await app.inject({ method: 'POST', url: '/things', payload: payload as object });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
    const problem = response.json();
    assert.equal(problem.type, 'urn:platform:error:VALIDATION_FAILED');
    return problem.fieldErrors as Array<{ field: string; message: string }>;
  };

  test('an explicit null for a field that does not allow it: "must not be null"', async () => {
    assert.deepEqual(await fieldErrorsOf({ name: null }), [{ field: 'name', message: 'must not be null' }]);
    assert.deepEqual(await fieldErrorsOf({ count: null }), [{ field: 'count', message: 'must not be null' }]);
    assert.deepEqual(await fieldErrorsOf({ kind: null }), [{ field: 'kind', message: 'must not be null' }]);
    assert.deepEqual(await fieldErrorsOf({ tags: ['a', null] }), [{ field: 'tags[1]', message: 'must not be null' }]);
  });

  test('a wrong type still names the type expected', async () => {
    assert.deepEqual(await fieldErrorsOf({ name: 5 }), [{ field: 'name', message: 'must be string' }]);
  });

  test('a nullable field (type list) gives one message for a wrong value', async () => {
    assert.deepEqual(await fieldErrorsOf({ parentId: 'nope' }), [{ field: 'parentId', message: 'must be a valid uuid' }]);
    assert.deepEqual(await fieldErrorsOf({ parentId: 5 }), [{ field: 'parentId', message: 'must be a string or null' }]);
    assert.deepEqual(await fieldErrorsOf({ label: 'long' }), [{ field: 'label', message: 'must NOT have more than 3 characters' }]);
    assert.deepEqual(await fieldErrorsOf({ mode: 'Z' }), [{ field: 'mode', message: 'must be one of X, Y, null' }]);
  });

  test('a nullable field (anyOf with a null branch) gives one message for a wrong value', async () => {
    assert.deepEqual(await fieldErrorsOf({ legacyRef: 'nope' }), [{ field: 'legacyRef', message: 'must be a valid uuid' }]);
    assert.deepEqual(await fieldErrorsOf({ legacyRef: 5 }), [{ field: 'legacyRef', message: 'must be a string or null' }]);
    assert.deepEqual(await fieldErrorsOf({ nested: { a: 5 } }), [{ field: 'nested.a', message: 'must be string' }]);
    assert.deepEqual(await fieldErrorsOf({ nested: 'x' }), [{ field: 'nested', message: 'must be an object or null' }]);
  });

  test('null is accepted where the field allows it', async () => {
    const response = await app.inject({ method: 'POST', url: '/things', payload: { parentId: null, label: null, mode: null, legacyRef: null, nested: null } });
    assert.equal(response.statusCode, 200, response.body);
  });
});
