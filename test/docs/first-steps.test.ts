// The README's first steps work as written: the shell block(s) of its "First steps" section, read
// from README.md at test time, run with bash, curl and jq against the service started as the README
// starts it (`npm start`: the build check, then `node dist/server.js all` on embedded PGlite).
//
// The one change made to the commands: the README's service listens on the default ports 8080,
// 8081 and 8090; this one listens on ports the OS hands out (several test files may run at once),
// so the base URLs http://localhost:8080, :8081 and :8090 are rewritten to those ports. Nothing
// else of the text is touched. Its data directory is a fresh temporary folder.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../faults/harness.js';
import { missing, requireCurlAndJq } from '../helpers/requirements.js';
import { withoutFencedCode } from './markdown-links.js';
import { REPOSITORY } from '../helpers/repository.js';

const ROOT = REPOSITORY;
const SECTION = 'First steps';
/** A first start on a busy 2-core machine took 33-38 s (README, Quick start); leave room for more load. */
const READY_WITHIN_MS = 240_000;
/** The block waits for two sagas; on a busy machine each takes seconds, not minutes. */
const BLOCK_WITHIN_MS = 180_000;

/** The fenced blocks tagged `sh` of the README section whose heading is `## {title}`, in order. */
function shellBlocksOfSection(markdown: string, title: string): string[] {
  const lines = markdown.split('\n');
  const prose = withoutFencedCode(markdown); // a "# comment" inside a code block is not a heading
  const start = prose.findIndex((line) => line.trim() === `## ${title}`);
  assert.ok(start >= 0, `README.md has no "## ${title}" section`);
  const next = prose.findIndex((line, i) => i > start && /^#{1,2} /.test(line));
  const end = next < 0 ? lines.length : next;
  const blocks: string[] = [];
  for (let i = start + 1; i < end; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})[ \t]*sh[ \t]*$/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const closes = (line: string) => {
      const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
      return close !== null && close[1]![0] === fence[0] && close[1]!.length >= fence.length;
    };
    const body: string[] = [];
    for (i += 1; i < end && !closes(lines[i]!); i++) body.push(lines[i]!);
    blocks.push(body.join('\n'));
  }
  return blocks;
}

interface Ports { api: number; data: number; idp: number; mqtt: number }

/** The README's base URLs, on the ports of this run. */
function onPorts(script: string, ports: Ports): string {
  return script
    .replaceAll('http://localhost:8080', `http://localhost:${ports.api}`)
    .replaceAll('http://localhost:8081', `http://localhost:${ports.data}`)
    .replaceAll('http://localhost:8090', `http://localhost:${ports.idp}`);
}

async function distinctFreePorts(): Promise<Ports> {
  const taken = new Set<number>([8080, 8081, 8090, 1883, 1884]);
  const next = async () => {
    for (;;) {
      const port = await freePort();
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  return { api: await next(), data: await next(), idp: await next(), mqtt: await next() };
}

interface Service { ports: Ports; child: ChildProcess; log: string[]; exited: Promise<number | null> }

/** `node dist/server.js all` in `dir` (its ./data there), on the given ports; the rest is the defaults. */
function startService(dir: string, ports: Ports): Service {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'server.js'), 'all'], {
    cwd: dir, // no .env of the checkout is read; ./data is the run's own
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(ports.api),
      DATA_PORT: String(ports.data),
      IDP_PORT: String(ports.idp),
      MQTT_PORT: String(ports.mqtt),
      DATA_DIR: path.join(dir, 'data'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  const collect = (chunk: Buffer) => log.push(...chunk.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { ports, child, log, exited };
}

const tail = (log: string[]) => log.slice(-30).join('\n');

async function answers(url: string, init?: RequestInit): Promise<number | null> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return null;
  }
}

/** Started and ready on both listeners, or an error with its log; on a port taken meanwhile, again on other ports. */
async function startReadyService(dir: string): Promise<Service> {
  for (let attempt = 1; ; attempt++) {
    const service = startService(dir, await distinctFreePorts());
    let exitCode: number | null | undefined;
    void service.exited.then((code) => { exitCode = code; });
    const deadline = Date.now() + READY_WITHIN_MS;
    while (exitCode === undefined && Date.now() < deadline) {
      if ((await answers(`http://127.0.0.1:${service.ports.api}/health/ready`)) === 200
        && (await answers(`http://127.0.0.1:${service.ports.data}/health/ready`)) === 200) return service;
      await sleep(250);
    }
    if (exitCode === undefined) {
      service.child.kill('SIGKILL');
      throw new Error(`the service was not ready within ${READY_WITHIN_MS} ms; its log:\n${tail(service.log)}`);
    }
    if (attempt === 3 || !service.log.some((line) => line.includes('EADDRINUSE'))) {
      throw new Error(`the service exited (${exitCode}) before it was ready; its log:\n${tail(service.log)}`);
    }
  }
}

/** Runs `script` with bash; resolves with its output once it ends, or kills it after `ms`. */
function runBash(script: string, ms: number): Promise<{ status: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', script], {
      env: { PATH: process.env['PATH'] ?? '', HOME: os.tmpdir(), LC_ALL: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a timeout ends curl and sleep too
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
    }, ms);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, timedOut });
    });
  });
}

describe('the README\'s first steps, run as written', { skip: missing(requireCurlAndJq()) }, () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const blocks = shellBlocksOfSection(readme, SECTION);
  /** "Publishing open data" goes on from where the first steps end (the open dataset $DS). */
  const openDataBlocks = shellBlocksOfSection(readme, 'Publishing open data');
  let dir: string;
  let service: Service | null = null;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'first-steps-'));
    // What `npm start` does before it starts the program: build dist/ when a source is newer.
    const built = spawnSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
    assert.equal(built.status, 0, `scripts/ensure-built.mjs: ${built.stderr}`);
    service = await startReadyService(dir);
  });

  after(async () => {
    if (service && service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill('SIGTERM');
      const killer = setTimeout(() => service!.child.kill('SIGKILL'), 15_000);
      await service.exited;
      clearTimeout(killer);
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the section has its shell block, on the README\'s default ports', () => {
    assert.equal(blocks.length, 1, `"${SECTION}" has ${blocks.length} sh blocks; this test expects the one walk-through`);
    for (const base of ['http://localhost:8080', 'http://localhost:8081', 'http://localhost:8090']) {
      assert.ok(blocks[0]!.includes(base), `the block no longer names ${base}: is the rewrite to this run's ports still right?`);
    }
  });

  test('from nothing to an anonymous read, then into the open-data catalogue: the statuses and answers its comments promise', async () => {
    const { api, data } = service!.ports;
    const script = onPorts([...blocks, ...openDataBlocks].join('\n'), service!.ports);
    assert.doesNotMatch(script, /localhost:80(80|81|90)\b/, 'a default port left after the rewrite');
    // After the block, and not part of it: the dataset's id, for the checks below.
    const run = await runBash(`${script}\nprintf 'dataset %s\\n' "$DS"\n`, BLOCK_WITHIN_MS);
    const context = `\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n--- service log\n${tail(service!.log)}`;
    assert.equal(run.timedOut, false, `the block did not finish within ${BLOCK_WITHIN_MS} ms${context}`);
    assert.equal(run.status, 0, `bash exited ${run.status}${context}`);
    assert.equal(run.stderr, '', `the block wrote to stderr${context}`);

    const lines = run.stdout.trimEnd().split('\n');
    const datasetLine = lines.pop()!;
    assert.match(datasetLine, /^dataset [0-9a-f-]{36}$/, `no dataset id${context}`);
    assert.deepEqual(lines, [
      '{"dataSetStatus":"AVAILABLE","pendingSagaType":"RELEASE"}', // release: AVAILABLE, RELEASE
      '201', // a Thing written with the administrator's token
      '401', // the anonymous read before the dataset is open
      '{"dataSetStatus":"AVAILABLE","openDataAccess":true}', // the merge patch of released/meta
      '{"name":"Counter Main Street"}', // the anonymous read after it
      // Publishing open data: the catalogue metadata merged, and the dataset in the catalogue.
      '{"license":"CC_BY_4_0","keywords":[],"themes":["TRAN"],"contactEmail":null,"accrualPeriodicity":null,"hvdCategories":["c_b79e35eb"],"landingPage":null}',
      '1',
      '{"id":1,"name":"Counter Main Street"}', // its Things downloaded as GeoJSON
    ], context);

    // And as the comments say: anyone reads it now, writes still need a token.
    const things = `http://127.0.0.1:${data}/v1/datasets/${datasetLine.slice('dataset '.length)}/counters/Things`;
    assert.equal(await answers(things), 200);
    assert.equal(await answers(things, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name": "x", "description": "y"}' }), 401);
    assert.equal(await answers(`http://127.0.0.1:${api}/health/ready`), 200);
  });
});
