import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { missing, requirePodman } from '../helpers/requirements.js';
import { freePorts } from '../helpers/ports.js';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';
import { buildNodeBase, type BaseImageTimings } from './image-base.js';
import { podmanRunner, writeContainersConf } from './podman.js';
import { REPOSITORY } from '../helpers/repository.js';

/**
 * The Dockerfile as an operator uses it: built with podman on a Node base made here from Debian's
 * packages and the npm registry (NODE_IMAGE, the one build argument a production build leaves at
 * its default), then run against this machine's PostgreSQL in production mode. Checks what an
 * orchestrator relies on: readiness and liveness, the API answering through the container, a
 * non-root process that is the container's first one, the image's own HEALTHCHECK, and a SIGTERM
 * stop that drains and exits 0. Everything it made is removed afterwards.
 */

const ROOT = REPOSITORY;
const RUN_ID = `${process.pid}-${Date.now().toString(36)}`;
const BASE_TAG = `localhost/node-base:24-test-${RUN_ID}`;
const IMAGE_TAG = `localhost/city-data-platform:test-${RUN_ID}`;
const CONTAINER = `city-data-platform-test-${RUN_ID}`;
/** The image's non-root user (Dockerfile: useradd --uid 10001). */
const APP_UID = '10001';
/** The target for a start to ready, reported; the assertion allows a loaded CI machine far more. */
const READY_TARGET_MS = 5_000;
const READY_BOUND_MS = 30_000;
/** src/server.ts's SHUTDOWN_TIMEOUT_MS: a drain that takes longer exits 1 by itself. */
const DRAIN_BOUND_MS = 10_000;
/** podman stop's grace before SIGKILL, above the drain bound so that a slow drain shows as such. */
const STOP_GRACE_S = 20;

const postgres = process.env['TEST_DATABASE_URL'] ? null : 'needs TEST_DATABASE_URL (the container runs against that server)';

/** The status of a GET, or null when nothing answers (yet). */
async function statusOf(url: string): Promise<number | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return null;
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('the container image (podman)', { skip: missing(requirePodman(), postgres) }, () => {
  let workDir: string;
  let logFile: string;
  let podman: ReturnType<typeof podmanRunner>;
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | null = null;
  let api: string;
  let ports: { api: number; data: number; mqtt: number };
  let imagesBefore: Set<string>;
  const timings: Partial<BaseImageTimings> & { buildMs?: number; readyMs?: number } = {};
  /** Set by the last test: only a run that got through everything drops its log. */
  let completed = false;

  const untilReady = () => waitFor(() => statusOf(`${api}/health/ready`).then((status) => status === 200), {
    what: `${api}/health/ready to answer 200`, timeoutMs: READY_BOUND_MS, intervalMs: 50,
  });

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'image-test-'));
    // Beside the work folder, not in it: a failing run keeps the log its error message points to.
    logFile = path.join(os.tmpdir(), `image-test-${RUN_ID}.log`);
    podman = podmanRunner(writeContainersConf(workDir), logFile);
    imagesBefore = new Set((await podman(['images', '--all', '--quiet', '--no-trunc'])).stdout.split('\n').filter(Boolean));

    Object.assign(timings, await buildNodeBase(BASE_TAG, workDir, logFile, podman));
    // --format docker: the OCI format has no HEALTHCHECK, and docker builds keep it; see docs/production.md ("Container image").
    const build = await podman([
      'build', '--format', 'docker', '--build-arg', `NODE_IMAGE=${BASE_TAG}`, '--tag', IMAGE_TAG, ROOT,
    ], { timeoutMs: 900_000 });
    timings.buildMs = build.ms;

    database = await freshPostgresDatabase();
    const [apiPort, dataPort, mqttPort] = await freePorts(3);
    ports = { api: apiPort!, data: dataPort!, mqtt: mqttPort! };
    api = `http://127.0.0.1:${ports.api}`;
  }, { timeout: 1_200_000 });

  after(async () => {
    if (podman) {
      await podman(['rm', '--force', '--volumes', '--ignore', CONTAINER]).catch(() => undefined);
      await podman(['rmi', '--force', IMAGE_TAG, BASE_TAG], { okCodes: [1] }).catch(() => undefined);
      // The build stage's image is left untagged; remove what this run left so, and nothing older.
      const dangling = (await podman(['images', '--all', '--quiet', '--no-trunc', '--filter', 'dangling=true'])).stdout.split('\n').filter(Boolean);
      const ours = dangling.filter((id) => !imagesBefore.has(id));
      if (ours.length > 0) await podman(['rmi', ...ours], { okCodes: [1, 2] }).catch(() => undefined);
    }
    await database?.drop();
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
    if (completed) fs.rmSync(logFile, { force: true });
  });

  test('the image builds from Debian packages and the npm registry, and declares how it runs', async (t) => {
    t.diagnostic(`base: Node ${timings.nodeVersion}; npm pack ${seconds(timings.npmPackMs!)}, mmdebstrap ${seconds(timings.mmdebstrapMs!)}, podman import ${seconds(timings.importMs!)}`);
    const { stdout } = await podman(['image', 'inspect', IMAGE_TAG]);
    const [image] = JSON.parse(stdout) as Array<{ Size: number; Config: Record<string, unknown> }>;
    t.diagnostic(`podman build ${seconds(timings.buildMs!)}; image ${(image!.Size / 1e6).toFixed(0)} MB`);
    const config = image!.Config;
    assert.equal(config['User'], `${APP_UID}:${APP_UID}`);
    assert.equal(config['WorkingDir'], '/app');
    assert.equal(config['StopSignal'], 'SIGTERM');
    assert.deepEqual(config['Cmd'], ['node', 'dist/server.js', 'all']);
    assert.deepEqual(Object.keys(config['ExposedPorts'] as object).sort(), ['1884/tcp', '8080/tcp', '8081/tcp']);
    for (const setting of ['NODE_ENV=production', 'DEV_IDP=off', 'DATA_DIR=/app/data', 'NODE_OPTIONS=--max-semi-space-size=64']) assert.ok((config['Env'] as string[]).includes(setting), setting);
  });

  test(`started with podman run, it is ready (target ${READY_TARGET_MS / 1000} s)`, async (t) => {
    const startedAt = performance.now();
    await podman([
      'run', '--detach', '--name', CONTAINER, '--network', 'host',
      // The image's HEALTHCHECK is run by hand below: podman's timer for it needs systemd, absent here.
      '--no-healthcheck',
      // As compose.yaml runs it: a read-only root, /tmp writable (podman mounts a tmpfs there).
      '--read-only',
      '--env', `DATABASE_URL=${database!.url}`, '--env', `SECRETS_KEY=${randomBytes(32).toString('base64')}`, '--env', 'HOST=127.0.0.1',
      '--env', `PORT=${ports.api}`, '--env', `DATA_PORT=${ports.data}`, '--env', `MQTT_PORT=${ports.mqtt}`,
      // The production settings are the image's own; these say so, as an operator's unit file would.
      '--env', 'NODE_ENV=production', '--env', 'DEV_IDP=off',
      IMAGE_TAG,
    ], { timeoutMs: 120_000 });
    await untilReady();
    timings.readyMs = performance.now() - startedAt;
    const logs = (await podman(['logs', CONTAINER])).stdout;
    const startMs = /"startMs":(\d+)/.exec(logs)?.[1];
    t.diagnostic(`ready ${seconds(timings.readyMs)} after podman run (target ${READY_TARGET_MS / 1000} s; the program's own start, from its log: ${startMs} ms; on a fresh database, migrations included)`);
    assert.ok(timings.readyMs < READY_BOUND_MS);
  });

  test('/health/live and /health/ready answer UP', async () => {
    for (const probe of ['live', 'ready']) {
      const response = await fetch(`${api}/health/${probe}`);
      assert.equal(response.status, 200, probe);
      assert.equal(((await response.json()) as { status: string }).status, 'UP', probe);
    }
  });

  test('the management API answers through the container: /v1/users/me without a token is 401', async () => {
    const response = await fetch(`${api}/v1/users/me`);
    await response.arrayBuffer();
    assert.equal(response.status, 401);
  });

  test(`node is the container's first process and runs as uid ${APP_UID}, not root`, async () => {
    assert.equal((await podman(['exec', CONTAINER, 'id', '-u'])).stdout.trim(), APP_UID);
    const firstProcess = (await podman(['exec', CONTAINER, 'cat', '/proc/1/cmdline'])).stdout.split('\0').filter(Boolean);
    assert.deepEqual(firstProcess, ['node', 'dist/server.js', 'all']);
    const status = (await podman(['exec', CONTAINER, 'cat', '/proc/1/status'])).stdout;
    assert.match(status, new RegExp(`^Uid:\\s+${APP_UID}\\s`, 'm'));
  });

  test("the image's HEALTHCHECK passes, and fails when the port it asks is wrong", async () => {
    const { stdout } = await podman(['image', 'inspect', '--format', '{{json .HealthCheck.Test}}', IMAGE_TAG]);
    const [form, ...command] = JSON.parse(stdout) as string[];
    assert.equal(form, 'CMD');
    const passing = await podman(['exec', CONTAINER, ...command], { okCodes: [1] });
    assert.equal(passing.code, 0, passing.stderr);
    const failing = await podman(['exec', '--env', `PORT=${ports.mqtt}`, CONTAINER, ...command], { okCodes: [1] });
    assert.equal(failing.code, 1, 'the probe must fail when nothing ready answers');
  });

  test('MapServer, spawn-fcgi and the PostgreSQL client tools are on PATH', async () => {
    const { stdout } = await podman(['exec', CONTAINER, 'sh', '-c', 'for tool in mapserv spawn-fcgi psql shp2pgsql; do command -v "$tool" || echo "missing: $tool"; done']);
    assert.doesNotMatch(stdout, /missing/, stdout);
    // The binary runs as the service's user: every library it links is in the image.
    const version = await podman(['exec', CONTAINER, 'mapserv', '-v']);
    assert.match(version.stdout, /MapServer version 8\.\d+/, version.stdout);
  });

  test(`podman stop (SIGTERM) drains and exits 0 within ${DRAIN_BOUND_MS / 1000} s, logging "stopped"`, async (t) => {
    const stop = await podman(['stop', '--time', String(STOP_GRACE_S), CONTAINER], { timeoutMs: (STOP_GRACE_S + 30) * 1000 });
    t.diagnostic(`podman stop took ${seconds(stop.ms)}`);
    const exitCode = (await podman(['inspect', '--format', '{{.State.ExitCode}}', CONTAINER])).stdout.trim();
    assert.equal(exitCode, '0');
    assert.ok(stop.ms < DRAIN_BOUND_MS, `podman stop took ${seconds(stop.ms)}`);
    const lines = (await podman(['logs', CONTAINER])).stdout.split('\n').filter((line) => line.startsWith('{'));
    const messages = lines.map((line) => (JSON.parse(line) as { msg?: string }).msg);
    assert.ok(messages.includes('shutting down'), 'the log says the shutdown began');
    assert.equal(messages.at(-1), 'stopped');
  });

  test('started again on its migrated database, it is ready and stops cleanly again', async (t) => {
    const startedAt = performance.now();
    await podman(['start', CONTAINER], { timeoutMs: 120_000 });
    await untilReady();
    const readyMs = performance.now() - startedAt;
    t.diagnostic(`ready ${seconds(readyMs)} after podman start (a restart: no migrations left to run)`);
    assert.ok(readyMs < READY_BOUND_MS);
    await podman(['stop', '--time', String(STOP_GRACE_S), CONTAINER], { timeoutMs: (STOP_GRACE_S + 30) * 1000 });
    assert.equal((await podman(['inspect', '--format', '{{.State.ExitCode}}', CONTAINER])).stdout.trim(), '0');
    completed = true;
  });
});
