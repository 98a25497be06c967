import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { ConnectorType } from '../../db/schema.js';
import { SecretUnreadableError, isSealed, type SecretKeyRing } from '../../db/secrets.js';
import { CONNECTORS, isObject, isSecretHeader } from './configuration.js';
import { loadAllConfigurations, loadSourceRows, updateStoredConfiguration } from './datasources.repo.js';

/**
 * Data source secrets at rest: `password` and the values of secret headers are stored sealed
 * (`db/secrets.ts`), never in clear. The API only ever masks them, so it never opens one; the
 * pipeline runtime opens them through `openedSourceConfiguration`.
 */

type Config = Record<string, unknown>;

/** Applies `change` to every secret of a configuration (password, secret header values); the others stay as they are. */
function mapSecrets(connector: ConnectorType, configuration: Config, change: (value: string, member: string) => string): Config {
  const out: Config = { ...configuration };
  for (const [name, member] of Object.entries(CONNECTORS[connector])) {
    const value = out[name];
    if (member.secret && typeof value === 'string') out[name] = change(value, name);
    else if (name === 'headers' && isObject(value)) {
      out[name] = Object.fromEntries(Object.entries(value).map(([header, text]) =>
        [header, isSecretHeader(header) && typeof text === 'string' ? change(text, `headers.${header}`) : text]));
    }
  }
  return out;
}

function sealedValuesOf(connector: ConnectorType, configuration: Config): Set<string> {
  const found = new Set<string>();
  mapSecrets(connector, configuration, (value) => { if (isSealed(value)) found.add(value); return value; });
  return found;
}

/**
 * The configuration to store: every secret sealed. A sealed value the stored configuration holds
 * (kept by `********`, or by a PATCH that leaves the member alone) stays as it is; any other is a
 * value written in clear, sealed now.
 */
export function sealConfiguration(ring: SecretKeyRing, connector: ConnectorType, configuration: Config, stored: Config): Config {
  const kept = sealedValuesOf(connector, stored);
  return mapSecrets(connector, configuration, (value) => (kept.has(value) ? value : ring.seal(value)));
}

/** A secret that no key of the ring opens: names the data source and member, never the value. */
export class DataSourceSecretError extends Error {}

function openValue(ring: SecretKeyRing, value: string, member: string, sourceId: string): string {
  try {
    return ring.open(value);
  } catch (error) {
    if (!(error instanceof SecretUnreadableError)) throw error;
    throw new DataSourceSecretError(`data source ${sourceId}: configuration.${member} cannot be opened: ${error.message}`, { cause: error });
  }
}

/** The configuration with its secrets in clear (a value still in clear from before sealing stays as it is). */
export function openConfiguration(ring: SecretKeyRing, connector: ConnectorType, configuration: Config, sourceId: string): Config {
  return mapSecrets(connector, configuration, (value, member) => (isSealed(value) ? openValue(ring, value, member, sourceId) : value));
}

/**
 * The configuration with every secret sealed with the current key; null when it already is. Every
 * sealed value is opened, those of the current key too: one altered in the database fails the
 * start with its name rather than a pipeline later.
 */
export function resealConfiguration(ring: SecretKeyRing, connector: ConnectorType, configuration: Config, sourceId: string): Config | null {
  let changed = false;
  const out = mapSecrets(connector, configuration, (value, member) => {
    if (!isSealed(value)) { changed = true; return ring.seal(value); }
    const clear = openValue(ring, value, member, sourceId);
    if (ring.isCurrent(value)) return value;
    changed = true;
    return ring.seal(clear);
  });
  return changed ? out : null;
}

// Any constant shared by every process of the service; it only has to differ from the other advisory locks.
const RESEAL_LOCK_KEY = 0x5ec7e75;

/**
 * Seals with the current key every data source secret still in clear (rows from before sealing)
 * or sealed with another key of the ring (a rotation). Every start checks every value (a key that
 * opens nothing fails the start, naming the data source and member) without locking anything;
 * only when something needs re-sealing does it take the advisory lock and the rows, and check
 * them again, so concurrent starts run one after the other and the second finds nothing to do.
 * Returns how many data sources were re-sealed. `modified_at` stays: nothing a client sees changed.
 */
export async function resealDataSourceSecrets(db: Database, ring: SecretKeyRing): Promise<number> {
  const stale = (await loadAllConfigurations(db)).filter((row) => resealConfiguration(ring, row.connectorType, row.configuration, row.id) !== null);
  if (stale.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${RESEAL_LOCK_KEY})`.execute(trx);
    let count = 0;
    for (const row of await loadAllConfigurations(trx, true)) {
      const resealed = resealConfiguration(ring, row.connectorType, row.configuration, row.id);
      if (!resealed) continue;
      await updateStoredConfiguration(trx, row.id, resealed);
      count++;
    }
    return count;
  });
}

/**
 * A data source's connector and configuration with its secrets in clear, for the pipeline
 * runtime (never for an answer): the members it stores, nothing else. Null when there is none;
 * DataSourceSecretError when a secret cannot be opened.
 */
export async function openedSourceConfiguration(db: Database, ring: SecretKeyRing, id: string): Promise<{ name: string; connectorType: ConnectorType; configuration: Config } | null> {
  const [row] = await loadSourceRows(db, [id]);
  if (!row) return null;
  return { name: row.name, connectorType: row.connectorType, configuration: openConfiguration(ring, row.connectorType, row.configuration, id) };
}
