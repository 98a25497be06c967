import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../../src/db/client.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { enablePostgis } from '../../src/db/postgis.js';
import { withClient } from './database-beside.js';
import { REPOSITORY } from './repository.js';

/**
 * A migrated PostgreSQL database (with PostGIS where the server has it) that the test apps'
 * databases are copied from (`create database … template …`): migrating each of them, and creating
 * PostGIS in each, cost a few seconds of the server's CPU apiece, and the suites make a hundred.
 * One per server and schema: its name carries a hash of the migrations, so a change of them makes
 * a new one (and drops the old). The first test process that needs it builds it under an advisory
 * lock, under a name of its own, and renames it when done, so no one copies a half-made template.
 */

const ROOT = REPOSITORY;
const PREFIX = 'test_template_';
/** Any number, the same in every test process: whoever holds it builds the template. */
const BUILD_LOCK = 7_315_002;

function templateName(): string {
  const hash = createHash('sha256');
  const migrations = path.join(ROOT, 'src', 'db', 'migrations');
  for (const name of fs.readdirSync(migrations).sort()) hash.update(name).update(fs.readFileSync(path.join(migrations, name)));
  return `${PREFIX}${hash.digest('hex').slice(0, 16)}`;
}

async function exists(serverUrl: string, name: string): Promise<boolean> {
  const { rows } = await withClient(serverUrl, (client) => client.query('select 1 from pg_database where datname = $1', [name]));
  return rows.length > 0;
}

const urlOf = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

async function build(serverUrl: string, name: string): Promise<void> {
  await withClient(serverUrl, async (admin) => {
    await admin.query('select pg_advisory_lock($1)', [BUILD_LOCK]);
    try {
      if ((await admin.query('select 1 from pg_database where datname = $1', [name])).rows.length > 0) return;
      const building = `${name}_building_${process.pid}`;
      await admin.query(`drop database if exists ${building} with (force)`);
      await admin.query(`create database ${building}`);
      const db = openDatabase({ url: urlOf(serverUrl, building), dataDir: null, poolSize: 1 });
      try {
        await migrateToLatest(db);
        await enablePostgis(db, true, { warn: () => {} });
      } finally {
        await db.destroy();
      }
      // Renamed (and copied) only without sessions: WITH (FORCE) is not there for ALTER, so wait for the pool's.
      for (let attempt = 0; attempt < 50; attempt++) {
        const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [building]);
        if (rows[0]!.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await admin.query(`alter database ${building} rename to ${name}`);
      // Templates of older migrations are of no more use here, but may be to another checkout's run on
      // the same server (a CI run beside a working tree): the three newest are kept, and none is
      // dropped by force (that killed the other run's session, and pg's client.end() then never
      // returned: the run hung with nothing left to wait for).
      const { rows: old } = await admin.query<{ datname: string }>(
        'select datname from pg_database where datname like $1 and datname <> $2 order by oid desc offset 2', [`${PREFIX}%`, name]);
      for (const { datname } of old) await admin.query(`drop database if exists ${datname}`).catch(() => undefined);
    } finally {
      await admin.query('select pg_advisory_unlock($1)', [BUILD_LOCK]);
    }
  });
}

let template: Promise<string> | null = null;

/** The template's name on the server of `serverUrl`, built first if it is not there. */
export function migratedTemplate(serverUrl: string): Promise<string> {
  template ??= (async () => {
    const name = templateName();
    if (!(await exists(serverUrl, name))) await build(serverUrl, name);
    return name;
  })();
  return template;
}
