import { sql, type ExpressionBuilder } from 'kysely';
import { jsonObjectFrom } from 'kysely/helpers/postgres';
import type { DB } from './schema.js';

/** A user's display name as every Ref to a user shows it: "First Last". Needs the alias `u`. */
export const userFullName = sql<string>`u.first_name || ' ' || u.last_name`;

/** The Ref {id, name} of the user whose id is in `column` (for example 'g.contact_user_id'), or null. */
export function userRefOf<T extends keyof DB>(eb: ExpressionBuilder<any, T>, column: string) {
  return jsonObjectFrom(eb.selectFrom('users as u').select(['u.id', userFullName.as('name')]).whereRef('u.id', '=', sql.ref(column) as never));
}
