import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, CLIENT_ID, REPO_ROOT } from '../settings.js';
import { startServer, type ServerProcess } from '../server-process.js';

/**
 * The processes of the fan-out benchmark: one development identity provider (`idp`) and several
 * replicas (`all`, DEV_IDP=off) on one PostgreSQL database, each with its own HTTP, data API and
 * MQTT ports, as several instances of the service behind a load balancer would run.
 */

export interface Replica {
  api: string;
  dataApi: string;
  mqttUrl: string;
  process: ServerProcess;
}

export interface Cluster {
  issuer: string;
  replicas: Replica[];
  stop(): Promise<void>;
}

const LOG_LEVEL = benchLogLevel('info');
/** Cluster n's ports start at 18400 + 100 n: its idp there, replica i's at + 10 (i + 1). */
const portsOf = (cluster: number, index: number) => {
  const base = 18400 + cluster * 100 + (index + 1) * 10;
  return { api: base, data: base + 1, mqtt: base + 3 };
};

/**
 * Starts the idp, then the replicas one after the other (the first migrates the fresh database).
 * `cluster` numbers clusters that run side by side (their ports differ); `env` is added to the
 * replicas' (MQTT_CLUSTER, for the Redis transport).
 */
export async function startCluster(cluster: number, distDir: string, databaseUrl: string, replicas: number, workDir: string, env: Record<string, string> = {}): Promise<Cluster> {
  const idpPort = 18400 + cluster * 100;
  const idpUrl = `http://127.0.0.1:${idpPort}`;
  const issuer = `${idpUrl}/realms/platform`;
  const common = {
    HOST: '127.0.0.1', IDP_PORT: String(idpPort), IDP_URL: idpUrl, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, NODE_ENV: 'development', DEV_IDP_TTL: '3600', LOG_LEVEL,
  };
  const server = join(distDir, 'server.js');
  const started: ServerProcess[] = [];
  const stop = async () => {
    for (const process of started.reverse()) await process.stop().catch(() => {});
  };
  try {
    started.push(await startServer({
      command: process.execPath, args: [server, 'idp'], serverCommandLine: /node \S*server\.js idp/,
      env: { ...common, DEV_IDP: 'on' }, readyUrl: `${issuer}/.well-known/openid-configuration`, logFile: join(workDir, 'idp.log'),
    }));
    const list: Replica[] = [];
    for (let index = 0; index < replicas; index++) {
      const ports = portsOf(cluster, index);
      const api = `http://127.0.0.1:${ports.api}`;
      const dataApi = `http://127.0.0.1:${ports.data}`;
      const process_ = await startServer({
        command: process.execPath, args: [server, 'all'], serverCommandLine: /node \S*server\.js all/,
        env: {
          ...common, DEV_IDP: 'off', DATABASE_URL: databaseUrl, PORT: String(ports.api), DATA_PORT: String(ports.data), MQTT_PORT: String(ports.mqtt),
          BASE_URL: api, DATA_API_URL: dataApi, ...env,
        },
        readyUrl: `${api}/health/ready`, logFile: join(workDir, `replica-${index}.log`),
      });
      started.push(process_);
      list.push({ api, dataApi, mqttUrl: `mqtt://127.0.0.1:${ports.mqtt}`, process: process_ });
    }
    return { issuer, replicas: list, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Builds a git revision (`main`, a commit) into a directory inside the checkout, so that its
 * `dist/server.js` resolves the checkout's node_modules: the baseline the current build is
 * measured against, on the same machine in the same run. Answers its dist directory and a removal.
 */
export function buildRevision(revision: string): { distDir: string; remove(): void } {
  const root = join(REPO_ROOT, '.bench-baseline');
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root);
  const archive = execFileSync('git', ['archive', revision, 'src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'], { cwd: REPO_ROOT, maxBuffer: 1 << 28 });
  execFileSync('tar', ['-x', '-C', root], { input: archive });
  execFileSync(join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  return { distDir: join(root, 'dist'), remove: () => rmSync(root, { recursive: true, force: true }) };
}
