import { sql } from 'kysely';
import type { EntityDef } from './model.js';

/**
 * The few pieces every SQL-building file of the store shares: which dataset schema a request
 * works in, and how its table aliases are named. Kept apart from the resolver so that derived.ts
 * (which the resolver uses for stream properties) can use them without importing the resolver.
 */

/** What every SQL-building file of the store needs to know about the dataset at hand. */
export interface SqlContext {
  schema: string;
  postgis: boolean;
  /** The table aliases of the request's statements: one counter per request (see AliasNames). */
  aliases: AliasNames;
}

export const tableOf = (ctx: SqlContext, entity: EntityDef) => sql.id(ctx.schema, entity.table);

/**
 * Names table aliases `t1`, `t2`, … in the order a request's statements ask for them, so that
 * nested subqueries never shadow their outer query's alias. Counted per request, not per process:
 * a request of the same shape then sends the same SQL text, which the pool runs as a prepared
 * statement (src/db/prepared-statements.ts); a process-wide counter made every `$expand` and every
 * `$filter` through a navigation a text never seen before, parsed and planned each time.
 */
export class AliasNames {
  private count = 0;

  next(): string {
    this.count += 1;
    return `t${this.count}`;
  }
}

/** A fresh table alias of this request. */
export const freshAlias = (ctx: SqlContext) => ctx.aliases.next();

export const column = (alias: string, name: string) => sql.ref(`${alias}.${name}`);
