import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { ReadableScope } from './check-access.js';

/**
 * Restricts a list to the objects the caller may read (authorization in SQL, so that the total is
 * right): everything, or the objects granted by their own id or lying in a granted datapool.
 * `inDatapools` says how an object of this list lies in datapools (a column, a join table).
 */
export function withReadableScope<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB, alias: string, readable: ReadableScope, inDatapools: (eb: ExpressionBuilder<any, any>, datapoolIds: string[]) => Expression<SqlBool>,
): QB {
  if (readable.all) return qb;
  const { ids, datapoolIds } = readable;
  if (ids.length + datapoolIds.length === 0) return qb.where(sql<SqlBool>`false`) as QB;
  return qb.where((eb: ExpressionBuilder<any, any>) => eb.or([
    ...(ids.length > 0 ? [eb(sql.ref(`${alias}.id`), 'in', ids)] : []),
    ...(datapoolIds.length > 0 ? [inDatapools(eb, datapoolIds)] : []),
  ])) as QB;
}
