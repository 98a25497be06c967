import type { Config } from './config.js';
import type { Database } from './db/client.js';
import type { Tenant } from './db/bootstrap.js';
import type { TokenVerifier } from './http/token-verifier.js';

/** What every module is given: built once at start, passed down (no globals). */
export interface AppContext {
  config: Config;
  db: Database;
  tenant: Tenant;
  verifier: TokenVerifier;
}
