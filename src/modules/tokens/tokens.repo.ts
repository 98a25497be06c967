import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { fetchPageIds, inIdOrder } from '../../db/list-query.js';
import type { ListRequest } from '../../http/page.js';
import { iso } from '../../http/resource.js';
import type { PersonalAccessToken } from './tokens.schemas.js';

export const TOKEN_SORT_COLUMNS: Record<string, string> = {
  createdAt: 't.created_at', name: 't.name', expiresAt: 't.expires_at', lastUsedAt: 't.last_used_at',
};

export interface TokenValues { id: string; userId: string; name: string; digest: string; expiresAt: Date; datasetIds: string[] | null }

export async function insertToken(db: Database, values: TokenValues): Promise<void> {
  await db.insertInto('personal_access_tokens').values({
    id: values.id, user_id: values.userId, name: values.name, token_hash: values.digest, expires_at: values.expiresAt,
    dataset_ids: values.datasetIds === null ? null : sql<string[]>`${sql.val(values.datasetIds)}::uuid[]`,
  } as never).execute();
}

/** The user's tokens among `ids`, in the order of `ids` (never the digest). */
export async function loadTokens(db: Database, userId: string, ids: readonly string[]): Promise<PersonalAccessToken[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('personal_access_tokens')
    .select(['id', 'name', 'created_at', 'expires_at', 'last_used_at', sql<string[] | string | null>`dataset_ids::text[]`.as('dataset_ids')])
    .where('user_id', '=', userId).where('id', 'in', [...ids]).execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    createdAt: iso(row.created_at),
    expiresAt: iso(row.expires_at),
    lastUsedAt: row.last_used_at === null ? null : iso(row.last_used_at),
    datasetIds: row.dataset_ids === null ? null : textArray(row.dataset_ids),
  })));
}

/** A text[] as the driver hands it back: an array, or its literal `{a,b}` (uuids need no quoting). */
const textArray = (value: string[] | string) => (Array.isArray(value) ? value : value.replace(/^\{|\}$/g, '').split(',').filter(Boolean));

export function findTokenPage(db: Database, userId: string, request: ListRequest) {
  return fetchPageIds(db.selectFrom('personal_access_tokens as t').where('t.user_id', '=', userId), 't', request, TOKEN_SORT_COLUMNS);
}

/** Deletes one of the user's tokens, answering what it was; null when the user has none with that id. */
export async function deleteTokenRow(db: Database, userId: string, id: string): Promise<Omit<PersonalAccessToken, 'lastUsedAt' | 'createdAt'> | null> {
  const row = await db.deleteFrom('personal_access_tokens').where('user_id', '=', userId).where('id', '=', id)
    .returning(['id', 'name', 'expires_at', sql<string[] | string | null>`dataset_ids::text[]`.as('dataset_ids')]).executeTakeFirst();
  if (!row) return null;
  return { id: row.id, name: row.name, expiresAt: iso(row.expires_at), datasetIds: row.dataset_ids === null ? null : textArray(row.dataset_ids) };
}

/** Which of the dataset ids exist (locked FOR KEY SHARE, as the scopes of assignments are). */
export async function existingDatasetIds(db: Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`select id from datasets where id in (${sql.join([...ids])}) for key share`.execute(db);
  return new Set(rows.map((row) => row.id));
}

/** The user's row, locked against a concurrent delete; whether it exists and is active. */
export async function lockUserState(db: Database, userId: string): Promise<{ active: boolean } | null> {
  const { rows: [row] } = await sql<{ active: boolean }>`select active from users where id = ${userId} for key share`.execute(db);
  return row ?? null;
}

export async function userExists(db: Database, userId: string): Promise<boolean> {
  return (await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst()) !== undefined;
}
