import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SignJWT, type JWTPayload } from 'jose';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import { buildIdpApp } from '../../src/idp/idp.app.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { getRealmKey } from '../../src/idp/realm-keys.js';
import { freePort } from './ports.js';
import { createDatabaseBeside, type DatabaseBeside } from './database-beside.js';
import { migratedPgliteSnapshot } from './pglite-snapshot.js';
import { migratedTemplate } from './postgres-template.js';
import type { AppContext } from '../../src/context.js';

export type DatabaseKind = 'pglite' | 'postgres';

const postgresVariantsNoted = new Set<string>();

/**
 * Every database a suite runs on: PGlite always, PostgreSQL when TEST_DATABASE_URL is set (CI);
 * PostgreSQL alone when TEST_DATABASE_KINDS=postgres is set too.
 * Without it the file's PostgreSQL variants are never declared, so nothing would count them: one
 * skipped test per file (`fileUrl`: its import.meta.url) stands in for them, so that the run's
 * summary says what did not run (and CI, which fails on any skip, cannot pass without PostgreSQL).
 */
export const databaseKinds = (fileUrl: string): DatabaseKind[] => {
  // CI's second runtime runs the suite on PostgreSQL alone (TEST_DATABASE_KINDS=postgres): PGlite's
  // variants ran on the first, and the files without variants (PGlite only) still run on both.
  if (process.env['TEST_DATABASE_URL'] && process.env['TEST_DATABASE_KINDS'] === 'postgres') return ['postgres'];
  if (process.env['TEST_DATABASE_URL']) return ['pglite', 'postgres'];
  if (!postgresVariantsNoted.has(fileUrl)) {
    postgresVariantsNoted.add(fileUrl);
    // Named after the file: node reports the helper as the place of declaration (scripts/test.mjs groups these).
    test(`PostgreSQL variants of ${path.relative(process.cwd(), fileURLToPath(fileUrl))}`, { skip: 'needs TEST_DATABASE_URL' }, () => {});
  }
  return ['pglite'];
};

export const DEV_PASSWORD = 'dev';
export const ADMIN_EMAIL = 'admin@example.com';
export const REALM = 'platform';

let idp: Promise<{ url: string; app: FastifyInstance }> | null = null;

/** One real development identity provider per test process, listening on a free loopback port. */
export function testIdp() {
  idp ??= (async () => {
    // The port first (issuers and endpoints name it), from this process's own block of test ports.
    const port = await freePort();
    const real = await buildIdpApp({ idpUrl: `http://127.0.0.1:${port}`, password: DEV_PASSWORD, tokenTtlSeconds: 300 });
    await real.listen({ host: '127.0.0.1', port });
    // Idle keep-alive sockets and the listener must not keep a finished test process alive.
    real.server.unref();
    real.server.on('connection', (socket) => socket.unref());
    return { url: `http://127.0.0.1:${port}`, app: real };
  })();
  return idp;
}

/** An empty database of its own on the server of TEST_DATABASE_URL (see database-beside.ts). */
export function freshPostgresDatabase(): Promise<DatabaseBeside> {
  return createDatabaseBeside(process.env['TEST_DATABASE_URL']!, 'test');
}

/** The same, migrated already (a copy of the run's template: see postgres-template.ts). */
async function migratedPostgresDatabase(): Promise<DatabaseBeside> {
  const serverUrl = process.env['TEST_DATABASE_URL']!;
  return createDatabaseBeside(serverUrl, 'test', await migratedTemplate(serverUrl));
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  idpUrl: string;
  /** A real token from the development identity provider for that email. */
  tokenFor(email: string, clientId?: string, realm?: string): Promise<string>;
  /** A token signed with the realm's real key but with claims of the test's choosing. */
  signToken(claims: JWTPayload, options?: { realm?: string; alg?: string }): Promise<string>;
  adminToken: string;
  /** The data API gateway on the same context, built on first use (routes polled every 50 ms) and closed with the app. */
  dataApi(): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export async function buildTestApp(kind: DatabaseKind, env: Record<string, string> = {}): Promise<TestApp> {
  const { url: idpUrl } = await testIdp();
  const database = kind === 'postgres' ? await migratedPostgresDatabase() : null;
  const config = loadConfig({ IDP_URL: idpUrl, LOG_LEVEL: 'silent', ...env });
  const ctx = await createContext(config, database
    ? { url: database.url, dataDir: null, poolSize: 5 }
    : { url: null, dataDir: null, pgliteSnapshot: await migratedPgliteSnapshot() });
  const app = await buildApp(ctx);
  await app.ready();

  const tokenFor = async (email: string, clientId = config.oidc.clientId, realm = REALM) => {
    const response = await fetch(`${idpUrl}/realms/${realm}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: clientId, username: email, password: DEV_PASSWORD }),
    });
    if (!response.ok) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const signToken = async (claims: JWTPayload, options: { realm?: string; alg?: string } = {}) => {
    const realm = options.realm ?? REALM;
    const key = await getRealmKey(realm);
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: `${idpUrl}/realms/${realm}`, azp: config.oidc.clientId, iat: now, exp: now + 300, ...claims })
      .setProtectedHeader({ alg: options.alg ?? 'RS256', kid: key.kid, typ: 'JWT' })
      .sign(key.privateKey);
  };

  let gateway: Promise<FastifyInstance> | null = null;
  const dataApi = () => {
    gateway ??= buildDataApiApp(ctx, { routePollMs: 50 }).then(async (built) => {
      await built.ready();
      return built;
    });
    return gateway;
  };

  return {
    app,
    ctx,
    idpUrl,
    dataApi,
    tokenFor,
    signToken,
    adminToken: await tokenFor(ADMIN_EMAIL),
    close: async () => {
      if (gateway) await (await gateway).close();
      await app.close();
      await ctx.db.destroy();
      await database?.drop();
    },
  };
}
