import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { ConnectionLog, Database, DatabaseTarget } from './client.js';
import { KEY_BYTES, SecretKeyRing, secretKey, type SecretKey } from './secrets.js';

/** The file beside the embedded database that keeps its generated key. */
export const GENERATED_KEY_FILE = 'secrets.key';
const GENERATED_KEY_ROW = 'datasource-secrets';

/**
 * The key ring of this process: SECRETS_KEY seals, SECRETS_KEY_PREVIOUS opens. Without
 * SECRETS_KEY the key generated at the first start seals (a file in DATA_DIR, mode 0600, on the
 * embedded database; the table `secrets_keys` on PostgreSQL), with a warning that whoever holds a
 * copy of the database holds its key. With SECRETS_KEY set, a key generated before still opens, so
 * that moving to an explicit key needs nothing else. An in-memory database (tests) gets a key that
 * lives as long as it does.
 */
export async function loadSecretKeyRing(db: Database, settings: Config['secrets'], where: DatabaseTarget, log: ConnectionLog): Promise<SecretKeyRing> {
  const create = settings.key === null;
  let generated: Buffer | null;
  let keptIn: string;
  if (where.url) {
    generated = await keyInDatabase(db, create);
    keptIn = 'the database (table secrets_keys)';
  } else if (where.dataDir) {
    keptIn = path.join(where.dataDir, GENERATED_KEY_FILE);
    generated = keyInFile(keptIn, create);
  } else {
    generated = create ? randomBytes(KEY_BYTES) : null;
    keptIn = '';
  }
  if (settings.key === null) {
    if (keptIn) log.warn({}, `SECRETS_KEY is not set: data source secrets are encrypted with a key generated at the first start and kept in ${keptIn}, so a copy of it opens them; set SECRETS_KEY (32 bytes, base64) to keep the key apart from the data`);
    return ring(generated!, [settings.previousKey]);
  }
  return ring(settings.key, [settings.previousKey, generated]);
}

function ring(current: Buffer, others: (Buffer | null)[]): SecretKeyRing {
  return new SecretKeyRing(secretKey(current), others.filter((key): key is Buffer => key !== null).map(secretKey) satisfies SecretKey[]);
}

/** The generated key of this PostgreSQL database; `create` makes it when there is none (the first of concurrent starts wins). */
async function keyInDatabase(db: Database, create: boolean): Promise<Buffer | null> {
  if (create) {
    await db.insertInto('secrets_keys').values({ name: GENERATED_KEY_ROW, key: randomBytes(KEY_BYTES) }).onConflict((oc) => oc.column('name').doNothing()).execute();
  }
  const row = await db.selectFrom('secrets_keys').select('key').where('name', '=', GENERATED_KEY_ROW).executeTakeFirst();
  return row ? Buffer.from(row.key) : null;
}

/** The generated key of an embedded database; `create` writes it (mode 0600, never over an existing file). */
function keyInFile(file: string, create: boolean): Buffer | null {
  if (create) {
    try {
      writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const key = Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte key in base64; restore it from a backup or set SECRETS_KEY`);
  return key;
}
