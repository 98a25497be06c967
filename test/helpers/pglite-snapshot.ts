import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openDatabase, pgliteSnapshot } from '../../src/db/client.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { REPOSITORY } from './repository.js';

/**
 * A migrated, empty PGlite database as a tarball, which every in-memory test database starts from.
 * Creating a PGlite cluster from nothing (initdb inside WebAssembly) and migrating it costs several
 * seconds of CPU, and the suites start hundreds of them; loading a snapshot costs a fraction. The
 * tarball is kept in the temp folder under a name that changes with the migrations and the PGlite
 * version, so that the test processes of a run (and of later runs) make it once.
 */

const ROOT = REPOSITORY;
const PREFIX = 'city-data-platform-pglite-';

/** What the snapshot depends on: every migration's source and the PGlite release. */
function snapshotKey(): string {
  const hash = createHash('sha256');
  const migrations = path.join(ROOT, 'src', 'db', 'migrations');
  for (const name of fs.readdirSync(migrations).sort()) hash.update(name).update(fs.readFileSync(path.join(migrations, name)));
  hash.update(fs.readFileSync(path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json')));
  return hash.digest('hex').slice(0, 16);
}

async function makeSnapshot(file: string): Promise<Buffer> {
  const db = openDatabase({ url: null, dataDir: null });
  try {
    await migrateToLatest(db);
    const tarball = Buffer.from(await (await pgliteSnapshot(db)).arrayBuffer());
    // Written aside, then renamed: a test process starting meanwhile reads a whole file or none.
    const partial = `${file}.${process.pid}`;
    fs.writeFileSync(partial, tarball);
    fs.renameSync(partial, file);
    // Snapshots of older migrations are of no more use (40 MB each).
    for (const name of fs.readdirSync(path.dirname(file))) {
      if (name.startsWith(PREFIX) && name.endsWith('.tar') && path.join(path.dirname(file), name) !== file) fs.rmSync(path.join(path.dirname(file), name), { force: true });
    }
    return tarball;
  } finally {
    await db.destroy();
  }
}

let snapshot: Promise<Blob> | null = null;

/** The snapshot, made by the first test process that needs it. */
export function migratedPgliteSnapshot(): Promise<Blob> {
  snapshot ??= (async () => {
    const file = path.join(os.tmpdir(), `${PREFIX}${snapshotKey()}.tar`);
    const tarball = fs.existsSync(file) ? fs.readFileSync(file) : await makeSnapshot(file);
    return new Blob([new Uint8Array(tarball)]);
  })();
  return snapshot;
}

/**
 * A DATA_DIR for a service started as a child process, unpacked from the snapshot: the child opens
 * a migrated database instead of creating one (where a test is not about the first start).
 */
export async function prefilledPgliteDirectory(dataDir: string): Promise<void> {
  const db = openDatabase({ url: null, dataDir, pgliteSnapshot: await migratedPgliteSnapshot() });
  try {
    // Unpacked and started: closing earlier would leave a half-written directory.
    await sql`select 1`.execute(db);
  } finally {
    await db.destroy();
  }
}
