import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { newPersonalAccessToken, personalAccessTokenDigest } from '../../access/credentials.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { recordEvent, type Actor } from '../audit/index.js';
import { pageOf, parseSort } from '../../http/page.js';
import { deleteTokenRow, findTokenPage, insertToken, loadTokens, TOKEN_SORT_COLUMNS } from './tokens.repo.js';
import { existingDatasetIds } from '../datasets/index.js';
import { findUserActivity, lockUserState } from '../users/index.js';
import type { CreatedPersonalAccessToken, PersonalAccessTokenInput, PersonalAccessTokenListQuery } from './tokens.schemas.js';

const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_LIFETIME_DAYS = 90;

/** The expiry a creation asks for: default 90 days; in the past or more than one (calendar) year ahead: 400. */
export function expiryOf(requested: string | null | undefined, now = new Date()): Date {
  if (requested === undefined || requested === null) return new Date(now.getTime() + DEFAULT_LIFETIME_DAYS * DAY_MS);
  const expiresAt = new Date(requested);
  if (Number.isNaN(expiresAt.getTime())) throw validationFailed('expiresAt', 'must be a date-time');
  if (expiresAt.getTime() <= now.getTime()) throw validationFailed('expiresAt', 'must be in the future');
  const latest = new Date(now);
  latest.setUTCFullYear(latest.getUTCFullYear() + 1);
  if (expiresAt.getTime() > latest.getTime()) throw validationFailed('expiresAt', `must be at most one year ahead (${latest.toISOString()})`);
  return expiresAt;
}

/** The service's user behind the caller: a token can only be made for one that exists and is active. */
function userOf(caller: Caller): string {
  if (!caller.profile) {
    throw new AppError('ACCESS_DENIED', 'A personal access token belongs to a user of this service, and your token names none (ask an administrator to create your user)');
  }
  return caller.profile.userId;
}

/** The audit log's view of a token: what it is for, never its secret or digest. */
const auditState = (token: { name: string; expiresAt: string; datasetIds: string[] | null }, userId: string) =>
  ({ userId, name: token.name, expiresAt: token.expiresAt, datasetIds: token.datasetIds });

export async function createToken(db: Database, caller: Caller, actor: Actor, input: PersonalAccessTokenInput): Promise<CreatedPersonalAccessToken> {
  const userId = userOf(caller);
  const expiresAt = expiryOf(input.expiresAt);
  const datasetIds = input.datasetIds ? input.datasetIds.map((id) => id.toLowerCase()) : null;
  const secret = newPersonalAccessToken();
  const id = randomUUID();
  await db.transaction().execute(async (trx) => {
    const user = await lockUserState(trx, userId);
    if (!user) throw new AppError('ACCESS_DENIED', 'Your user was deleted; a personal access token cannot be created for it');
    if (!user.active) throw new AppError('ACCESS_DENIED', 'Your user is inactive and holds no permission; a personal access token would grant nothing');
    if (datasetIds) {
      const existing = await existingDatasetIds(trx, datasetIds);
      const index = datasetIds.findIndex((datasetId) => !existing.has(datasetId));
      if (index >= 0) throw validationFailed(`datasetIds[${index}]`, 'no dataset has this id');
    }
    await insertToken(trx, { id, userId, name: input.name, digest: personalAccessTokenDigest(secret), expiresAt, datasetIds });
    await recordEvent(trx, actor, {
      type: 'TOKEN_CREATED', objectType: 'PERSONAL_ACCESS_TOKEN', objectId: id,
      before: null, after: auditState({ name: input.name, expiresAt: expiresAt.toISOString(), datasetIds }, userId),
    });
  });
  const [token] = await loadTokens(db, userId, [id]);
  return { ...token!, token: secret };
}

export async function listTokens(db: Database, userId: string, query: PersonalAccessTokenListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(TOKEN_SORT_COLUMNS)) };
  const { ids, total } = await findTokenPage(db, userId, request);
  return pageOf(await loadTokens(db, userId, ids), total, request);
}

/** The caller's own tokens: none for a caller the service does not know. */
export async function listOwnTokens(db: Database, caller: Caller, query: PersonalAccessTokenListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(TOKEN_SORT_COLUMNS)) };
  if (!caller.profile) return pageOf([], 0, request);
  return listTokens(db, caller.profile.userId, query);
}

/** One token of the user (never its secret); 404 when the user has none with that id. */
export async function getToken(db: Database, userId: string | null, id: string) {
  const [token] = userId === null ? [] : await loadTokens(db, userId, [id]);
  if (!token) throw notFound('Personal access token', id);
  return token;
}

/** An administrator's view of a user's tokens: 404 for an unknown user. */
export async function listTokensOfUser(db: Database, userId: string, query: PersonalAccessTokenListQuery) {
  if (!(await findUserActivity(db, userId))) throw notFound('User', userId);
  return listTokens(db, userId, query);
}

/** Deletes a token of the user (404 when the user has none with that id); every process refuses it within a second. */
export async function deleteToken(db: Database, actor: Actor, userId: string | null, id: string): Promise<void> {
  if (userId === null) throw notFound('Personal access token', id);
  await db.transaction().execute(async (trx) => {
    const deleted = await deleteTokenRow(trx, userId, id);
    if (!deleted) throw notFound('Personal access token', id);
    await recordEvent(trx, actor, { type: 'TOKEN_DELETED', objectType: 'PERSONAL_ACCESS_TOKEN', objectId: id, before: auditState(deleted, userId), after: null });
  });
}
