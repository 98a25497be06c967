import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createStaServer, dispatch } from '../../src/sta/server.js';
import type { StaServerDeps } from '../../src/sta/server-deps.js';
import type { PathSegment, QueryOptions, ResourcePath } from '../../src/sta/query/ast.js';
import { StaQueryError } from '../../src/sta/query/errors.js';
import type { StaRequest, StaResponse } from '../../src/sta/types.js';
import { freshPostgresDatabase, type DatabaseKind } from '../helpers/test-app.js';

/**
 * The store on its own, below the query parser: requests with a path of the simple shapes these
 * tests use and options given as parsed syntax. The HTTP tests go through the real parser.
 */

export const BASE = 'http://data.example/v1/datasets/7/sensors';
export const SCHEMA = 'ds_store_test';

/** Enough of the path grammar for `Things(1)/Datastreams/$ref`-like paths. */
export function simplePath(text: string): ResourcePath {
  const segments: PathSegment[] = [];
  let pos = 0;
  for (const part of text.split('/').filter(Boolean)) {
    if (part === '$ref') segments.push({ kind: 'ref', pos });
    else if (part === '$value') segments.push({ kind: 'value', pos });
    else {
      const match = /^([A-Za-z@.]+)(?:\((\d+)\))?$/.exec(part);
      if (!match) throw new StaQueryError('path', pos, part, 'malformed segment');
      const id = match[2] === undefined ? {} : { id: Number(match[2]) };
      if (segments.length === 0) segments.push({ kind: 'entitySet', name: match[1]!, pos, ...id });
      else if (/^[A-Z]/.test(match[1]!)) segments.push({ kind: 'navigation', name: match[1]!, pos, ...id });
      else segments.push({ kind: 'property', name: match[1]!, pos });
    }
    pos += part.length + 1;
  }
  return segments;
}

export interface Store {
  db: Database;
  deps: StaServerDeps;
  call(method: StaRequest['method'], path: string, init?: { body?: unknown; options?: QueryOptions; query?: string; preferMinimal?: boolean }): Promise<StaResponse>;
  close(): Promise<void>;
}

export async function openStore(kind: DatabaseKind, extra: Partial<StaServerDeps> = {}): Promise<Store> {
  const pg = kind === 'postgres' ? await freshPostgresDatabase() : null;
  const db = openDatabase({ url: pg?.url ?? null, dataDir: null });
  const deps: StaServerDeps = { db, ...extra };
  const server = createStaServer(deps);
  await db.transaction().execute((trx) => server.provision(trx, SCHEMA));
  // Twice: provisioning is a saga step that may run again.
  await db.transaction().execute((trx) => server.provision(trx, SCHEMA));
  return {
    db,
    deps,
    call: (method, path, init = {}) =>
      dispatch(deps, {
        method, path, query: init.query ?? '', body: init.body, preferMinimal: init.preferMinimal ?? false,
        baseUrl: BASE, schema: SCHEMA, rights: { read: true, write: true },
      }, simplePath(path), init.options ?? {}),
    close: async () => {
      await db.destroy();
      await pg?.drop();
    },
  };
}

export const count = async (db: Database, table: string) =>
  Number((await sql<{ n: number }>`select count(*) as n from ${sql.id(SCHEMA, table)}`.execute(db)).rows[0]!.n);
