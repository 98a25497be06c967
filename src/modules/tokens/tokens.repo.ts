import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { fetchPageIds, inIdOrder, type ListRequest } from '../../db/list-query.js';
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
