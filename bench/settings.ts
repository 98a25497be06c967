import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What every benchmark reads from the environment, and the development identity it logs in as. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SERVER_URL = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const DURATION = Number(process.env['BENCH_DURATION'] ?? 10);
export const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 10);
export const benchLogLevel = (fallback: string) => process.env['BENCH_LOG_LEVEL'] ?? fallback;
export const ADMIN_EMAIL = 'admin@example.com';
export const CLIENT_ID = 'api-access';

/** A token of the development identity provider at `issuer` (password `dev`, as every development user has). */
export async function devToken(issuer: string, email: string): Promise<string> {
  const response = await fetch(`${issuer}/protocol/openid-connect/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', client_id: CLIENT_ID, username: email, password: 'dev' }),
  });
  if (!response.ok) throw new Error(`token request answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

export interface BenchPorts { api: number; data: number; idp: number }

/** The Node options the image runs the service with (the Dockerfile's `ENV NODE_OPTIONS`): a benchmark measures the deployed defaults. */
export const IMAGE_NODE_OPTIONS = imageNodeOptions();

function imageNodeOptions(): string {
  const line = /^ENV NODE_OPTIONS=(.+)$/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
  if (!line) throw new Error('the Dockerfile sets no NODE_OPTIONS; the benchmarks start the service with the image\'s');
  return line[1]!.trim().replace(/^"(.*)"$/, '$1');
}

/** The settings a benchmark's server child gets: its own ports, no inherited database, the development IdP. */
export function serverEnvironment(ports: BenchPorts, logLevel: string, extra: Record<string, string>): Record<string, string> {
  const idp = `http://127.0.0.1:${ports.idp}`;
  return {
    HOST: '127.0.0.1', PORT: String(ports.api), DATA_PORT: String(ports.data), IDP_PORT: String(ports.idp), IDP_URL: idp,
    BASE_URL: `http://127.0.0.1:${ports.api}`, DATA_API_URL: `http://127.0.0.1:${ports.data}`, OIDC_ISSUER: `${idp}/realms/platform`, OIDC_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, DEV_IDP: 'on', NODE_ENV: 'development', DEV_IDP_TTL: '3600',
    DATABASE_URL: '', LOG_LEVEL: logLevel, NODE_OPTIONS: IMAGE_NODE_OPTIONS, ...extra,
  };
}
