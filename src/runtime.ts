import type { Config } from './config.js';
import { openDatabase, type DatabaseTarget } from './db/client.js';
import { migrateToLatest } from './db/migrate.js';
import { bootstrap } from './db/bootstrap.js';
import { createTokenVerifier } from './http/token-verifier.js';
import type { AppContext } from './context.js';
import { SagaRunner } from './jobs/saga-runner.js';
import { datasetSagas } from './modules/datasets/index.js';

/**
 * Opens the database, migrates it, bootstraps the tenant and prepares the token verifier: the
 * state every listener of one process shares. The caller closes it with `ctx.db.destroy()`.
 */
export async function createContext(config: Config, target?: DatabaseTarget): Promise<AppContext> {
  const db = openDatabase(target ?? { url: config.database.url, dataDir: config.database.dataDir });
  try {
    await migrateToLatest(db);
    const tenant = await bootstrap(db, config.bootstrap);
    const verifier = createTokenVerifier({ issuer: config.oidc.issuer, clientId: config.oidc.clientId });
    const sagas = new SagaRunner(db, datasetSagas());
    return { config, db, tenant, verifier, sagas };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}
