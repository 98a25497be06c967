import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from './test-app.js';
import { scopeColumns } from '../../src/access/scopes.js';

/**
 * Small builders for HTTP-level tests: each creates one resource through the API with the
 * administrator's token and returns its JSON representation. Names are unique per process
 * (a counter) and per run (a random suffix), so that tests never depend on one another.
 */

type Json = Record<string, any>;
export type ScopeType = 'TENANT' | 'DATASTRUCTURE' | 'DATASOURCE' | 'DATASET' | 'DATAPOOL';

let counter = 0;
export const uniqueName = (prefix = 'test') => `${prefix}-${++counter}-${randomBytes(3).toString('hex')}`;
export const uniqueEmail = (prefix = 'user') => `${uniqueName(prefix).toLowerCase()}@example.test`;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A problem answer of the contract: status, media type, type URN, and the status repeated in the body. */
export function expectProblem(response: LightMyRequestResponse, status: number, code: string): Json {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = response.json();
  assert.equal(body.type, `urn:platform:error:${code}`);
  assert.equal(body.status, status);
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  assert.equal(typeof body.instance, 'string');
  return body;
}

/** 400 VALIDATION_FAILED whose fieldErrors name `field`. */
export function expectFieldError(response: LightMyRequestResponse, field: string): Json {
  const body = expectProblem(response, 400, 'VALIDATION_FAILED');
  assert.ok(Array.isArray(body.fieldErrors), response.body);
  assert.ok(body.fieldErrors.some((e: { field: string }) => e.field === field), `expected a field error on ${field}: ${response.body}`);
  return body;
}

/** The gateway's 401: an HTML page, never a problem object. */
export function expectHtml401(response: LightMyRequestResponse): void {
  assert.equal(response.statusCode, 401, response.body);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.match(response.body, /<html/i);
  assert.doesNotMatch(response.body, /urn:platform:error/);
}

async function post(t: TestApp, url: string, payload: unknown, token = t.adminToken) {
  return t.app.inject({ method: 'POST', url, headers: bearer(token), payload: payload as Json });
}

function created(response: LightMyRequestResponse, what: string): Json {
  assert.equal(response.statusCode, 201, `creating ${what}: ${response.body}`);
  return response.json();
}

export interface TestUser { id: string; email: string; firstName: string; lastName: string }

/** A user through POST /v1/users. */
export async function createUser(t: TestApp, fields: Partial<Omit<TestUser, 'id'>> = {}): Promise<TestUser> {
  const input = {
    email: fields.email ?? uniqueEmail(),
    firstName: fields.firstName ?? `First${++counter}`,
    lastName: fields.lastName ?? `Last${randomBytes(2).toString('hex')}`,
  };
  const user = created(await post(t, '/v1/users', input), 'a user');
  return { id: user.id, email: user.email, firstName: user.firstName, lastName: user.lastName };
}

/** A datapool through POST /v1/datapools. */
export async function createDatapool(t: TestApp, fields: { name?: string; description?: string } = {}): Promise<{ id: string; name: string }> {
  const input = { name: fields.name ?? uniqueName('pool'), description: fields.description ?? 'a test datapool' };
  const pool = created(await post(t, '/v1/datapools', input), 'a datapool');
  return { id: pool.id, name: pool.name };
}

export const createGroup = async (t: TestApp, fields: Json = {}): Promise<Json> =>
  created(await post(t, '/v1/groups', { name: uniqueName('group'), ...fields }), 'a group');

export const createRole = async (t: TestApp, fields: Json = {}): Promise<Json> =>
  created(await post(t, '/v1/roles', { name: uniqueName('role'), roleType: 'DATA', ...fields }), 'a role');

export const createAssignment = async (t: TestApp, fields: { groupId: string; roleId: string; scopeType?: ScopeType; scopeId?: string }): Promise<Json> =>
  created(await post(t, '/v1/assignments', fields), 'an assignment');

export interface CataloguePermission { id: string; name: string; permissionType: 'SYSTEM' | 'DATA' }

const catalogues = new WeakMap<TestApp, Promise<Map<string, CataloguePermission>>>();

/** The permission catalogue by name, read once per test app. */
export function permissionsByName(t: TestApp): Promise<Map<string, CataloguePermission>> {
  let catalogue = catalogues.get(t);
  if (!catalogue) {
    catalogue = t.app.inject({ method: 'GET', url: '/v1/permissions', headers: bearer(t.adminToken) }).then((response) => {
      assert.equal(response.statusCode, 200, response.body);
      return new Map((response.json() as CataloguePermission[]).map((p) => [p.name, p]));
    });
    catalogues.set(t, catalogue);
  }
  return catalogue;
}

export async function permissionIds(t: TestApp, names: readonly string[]): Promise<string[]> {
  const catalogue = await permissionsByName(t);
  return names.map((name) => {
    const permission = catalogue.get(name);
    if (!permission) throw new Error(`no permission named ${name}`);
    return permission.id;
  });
}

/** The seeded roles and group, looked up by name. */
export async function seededRole(t: TestApp, name: string): Promise<Json> {
  const response = await t.app.inject({ method: 'GET', url: `/v1/roles?name=${encodeURIComponent(name)}&size=100`, headers: bearer(t.adminToken) });
  assert.equal(response.statusCode, 200, response.body);
  const role = response.json().content.find((r: Json) => r.name === name);
  assert.ok(role, `no role named ${name}`);
  return role;
}

export async function administratorsGroup(t: TestApp): Promise<Json> {
  const response = await t.app.inject({ method: 'GET', url: '/v1/groups?name=Administrators&size=100', headers: bearer(t.adminToken) });
  assert.equal(response.statusCode, 200, response.body);
  const group = response.json().content.find((g: Json) => g.name === 'Administrators');
  assert.ok(group, 'no Administrators group');
  return group;
}

/**
 * A caller holding exactly `permissionNames` on `scope` (TENANT by default): a new user with
 * that email, a role with those permissions (SYSTEM when any of them is SYSTEM), a group with
 * the user as its member and one assignment. Returns a real token for the email.
 *
 * The API refuses a SYSTEM role below TENANT scope; such a grant (which the access check would
 * honour on the datapool it names) is written directly, to test the check on its own.
 */
export async function grant(t: TestApp, email: string, permissionNames: readonly string[], scope: { scopeType: ScopeType; scopeId?: string } = { scopeType: 'TENANT' }): Promise<string> {
  const catalogue = await permissionsByName(t);
  const system = permissionNames.some((name) => catalogue.get(name)?.permissionType === 'SYSTEM');
  const user = await createUser(t, { email });
  const role = await createRole(t, { roleType: system ? 'SYSTEM' : 'DATA', permissionIds: await permissionIds(t, permissionNames) });
  const group = await createGroup(t, { memberIds: [user.id] });
  if (system && scope.scopeType !== 'TENANT') {
    assert.ok(scope.scopeId, 'a scope below TENANT needs a scopeId');
    await t.ctx.db.insertInto('assignments')
      .values({ id: randomUUID(), group_id: group.id, role_id: role.id, ...scopeColumns(scope.scopeType, scope.scopeId) })
      .execute();
  } else {
    await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: scope.scopeType, ...(scope.scopeId ? { scopeId: scope.scopeId } : {}) });
  }
  return t.tokenFor(email);
}
