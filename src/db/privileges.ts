import { sql } from 'kysely';
import type { Database } from './client.js';
import { StartRefusedError } from './start-errors.js';

/**
 * What the service's database role needs on a PostgreSQL server, checked before the first
 * migration so that a role set up by hand fails with one line naming what to grant, rather than
 * with a permission error somewhere in a migration or, later, in a dataset's saga:
 * - CREATE on the database: every provisioned dataset gets a schema of its own, and the trusted
 *   extension pg_trgm (search indexes) is created by the role itself;
 * - CREATE on the schema `public`, while migrations are pending: the tables go there (PostgreSQL 15
 *   no longer grants it to everyone);
 * - pg_trgm available on the server (Debian's postgresql package ships it).
 * PostGIS is optional (without it, geospatial filters and OWS answer what is missing); it needs a
 * superuser to create it once (src/db/postgis.ts says so at start).
 */
export async function checkDatabasePrivileges(db: Database, migrationsPending: boolean): Promise<void> {
  const { rows: [facts] } = await sql<{
    role: string; database: string; createOnDatabase: boolean; createOnPublic: boolean; trgmInstalled: boolean; trgmAvailable: boolean;
  }>`
    select current_user as role, current_database() as database,
           has_database_privilege(current_database(), 'CREATE') as "createOnDatabase",
           coalesce(has_schema_privilege('public', 'CREATE'), false) as "createOnPublic",
           exists (select 1 from pg_extension where extname = 'pg_trgm') as "trgmInstalled",
           exists (select 1 from pg_available_extensions where name = 'pg_trgm') as "trgmAvailable"`.execute(db);
  if (!facts) return;
  const missing: string[] = [];
  const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;
  if (!facts.createOnDatabase) missing.push(`CREATE on the database (a schema per dataset): GRANT CREATE ON DATABASE ${quoted(facts.database)} TO ${quoted(facts.role)}`);
  if (migrationsPending && !facts.createOnPublic) missing.push(`CREATE on schema public (the service's tables): GRANT CREATE ON SCHEMA public TO ${quoted(facts.role)}`);
  if (!facts.trgmInstalled && !facts.trgmAvailable) missing.push('the extension pg_trgm, which this PostgreSQL server does not ship (install its contrib package)');
  if (missing.length > 0) {
    throw new StartRefusedError(`database role ${quoted(facts.role)} lacks what the service needs: ${missing.join('; ')}`);
  }
}
