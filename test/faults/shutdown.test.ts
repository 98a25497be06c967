import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { databaseKinds, freshPostgresDatabase } from '../helpers/test-app.js';
import { adminToken, request, serverPorts, startServer, type ChildServer } from './harness.js';
import { prefilledPgliteDirectory } from '../helpers/pglite-snapshot.js';

/**
 * SIGTERM with writes in flight, on separate connections (some accepted but not yet parsed when
 * the signal lands): every one is answered 201, the process exits 0, and the writes are all there
 * after a restart on the same database. And a process paused past the end of its accept window
 * (SIGSTOP: a busy machine descheduling it, or a long stretch of PGlite's work) still serves every
 * connection that arrived within the window.
 */

const WRITES = 20;
// Longer than the server's accept window after SIGTERM (src/server.ts, ACCEPT_WINDOW_MAX_MS).
const PAUSE_MS = 1_500;
// While the window is kept open: a connection every so often, well within its quiet 100 ms.
const KEEP_OPEN_EVERY_MS = 20;
const PAUSE_ROUNDS = 3;

/** Runs one step of the test; a failure names the step and shows the server's last log lines. */
async function step<T>(server: ChildServer, what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw new Error(`${what}: ${(error as Error).message}\nthe server's log:\n${server.lines.slice(-40).join('\n')}`, { cause: error });
  }
}

/** Counts connections: `onConnect` for each request, `all` resolves once `count` have connected. */
function connections(count: number) {
  let connected = 0;
  let allConnected!: () => void;
  const all = new Promise<void>((resolve) => { allConnected = resolve; });
  return { all, onConnect: () => { if (++connected === count) allConnected(); } };
}

/** Each write that did not get its 201, and how, for the assertion's message. */
function failures(outcomes: Array<PromiseSettledResult<Awaited<ReturnType<typeof request>>>>): string[] {
  return outcomes.flatMap((outcome, index) => (outcome.status === 'rejected'
    ? [`write ${index}: ${(outcome.reason as Error).message}`]
    : outcome.value.status !== 201 ? [`write ${index}: ${outcome.value.status} ${JSON.stringify(outcome.value.body)}`] : []));
}

/**
 * Starts a server, sends it SIGTERM while connecting every KEEP_OPEN_EVERY_MS (so that its accept
 * window stays open), pauses it (SIGSTOP) once it is shutting down, makes WRITES connections with
 * a write each (the kernel completes them and queues them with their requests), and lets it run
 * again PAUSE_MS later, after its window's end. Returns each write's outcome.
 */
async function writesWhilePausedPastTheWindow(env: Record<string, string>, children: ChildServer[]) {
  const server = startServer(env, await serverPorts());
  children.push(server);
  await step(server, 'waiting for ready', () => server.waitForLine(/"msg":"ready: /));
  const token = await step(server, 'the token', () => adminToken(server.idpUrl));
  const { port, hostname } = new URL(server.apiUrl);
  const keepOpen = setInterval(() => {
    const socket = connect(Number(port), hostname, () => socket.destroy());
    socket.on('error', () => undefined);
  }, KEEP_OPEN_EVERY_MS);
  let pausedAt: number;
  try {
    server.process.kill('SIGTERM');
    await step(server, 'waiting for the shutdown to begin', () => server.waitForLine(/"msg":"shutting down"/));
    await sleep(2 * KEEP_OPEN_EVERY_MS);
    server.process.kill('SIGSTOP');
    pausedAt = Date.now();
  } finally {
    clearInterval(keepOpen);
  }
  try {
    const { all, onConnect } = connections(WRITES);
    const writes = Array.from({ length: WRITES }, () => request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name: `paused-${randomUUID()}` }, onConnect }));
    // Refused connections never connect: whichever comes first.
    await Promise.race([all, Promise.allSettled(writes)]);
    await sleep(PAUSE_MS - (Date.now() - pausedAt));
    server.process.kill('SIGCONT');
    return await Promise.allSettled(writes);
  } finally {
    server.process.kill('SIGCONT');
  }
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`graceful shutdown (${kind})`, () => {
    let env: Record<string, string>;
    let cleanUp: () => Promise<void>;
    const children: ChildServer[] = [];

    before(async () => {
      if (kind === 'postgres') {
        const database = await freshPostgresDatabase();
        env = { DATABASE_URL: database.url };
        cleanUp = database.drop;
      } else {
        const dataDir = mkdtempSync(join(tmpdir(), 'shutdown-'));
        await prefilledPgliteDirectory(dataDir);
        env = { DATA_DIR: dataDir };
        cleanUp = async () => rmSync(dataDir, { recursive: true, force: true });
      }
    });
    after(async () => {
      await Promise.all(children.map((child) => child.kill()));
      await cleanUp();
    });

    it(`answers all ${WRITES} writes in flight at SIGTERM, exits 0, and keeps them`, async () => {
      const ports = await serverPorts();
      // At debug the server logs each request as it arrives: the sign that it has read them all.
      const server = startServer({ ...env, LOG_LEVEL: 'debug' }, ports);
      children.push(server);
      await step(server, 'waiting for ready', () => server.waitForLine(/"msg":"ready: /));
      const token = await step(server, 'the token', () => adminToken(server.idpUrl));

      const names = Array.from({ length: WRITES }, () => `shutdown-${randomUUID()}`);
      // The signal lands once every connection is established (the server may not have read them yet).
      const { all: established, onConnect } = connections(WRITES);
      const writes = names.map((name) => request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name }, onConnect }));
      await established;
      await server.waitForLine(/"msg":"incoming request"/);
      server.process.kill('SIGTERM');
      // Each write's outcome, so that a failure names which writes failed and how, with the server's log.
      const outcomes = await Promise.allSettled(writes);
      const failed = failures(outcomes);
      assert.deepEqual(failed, [], `${failed.join('\n')}\nthe server's log:\n${server.lines.slice(-60).join('\n')}`);
      const answers = outcomes.map((outcome) => (outcome as PromiseFulfilledResult<Awaited<(typeof writes)[number]>>).value);
      assert.equal(await server.exited, 0, server.lines.slice(-10).join('\n'));
      assert.ok(server.lines.some((line) => line.includes('"msg":"stopped"')));

      const again = startServer(env, ports);
      children.push(again);
      await step(again, 'after the restart, waiting for ready', () => again.waitForLine(/"msg":"ready: /));
      const freshToken = await step(again, 'after the restart, the token', () => adminToken(again.idpUrl));
      for (const answer of answers) {
        const found = await step(again, `after the restart, reading group ${answer.body.name}`, () => request(`${again.apiUrl}/v1/groups/${answer.body.id}`, { token: freshToken }));
        assert.equal(found.status, 200, `group ${answer.body.name} after the restart`);
      }
      again.process.kill('SIGTERM');
      assert.equal(await again.exited, 0);
    });

    it(`serves all ${WRITES} connections made within the accept window while the process is paused past its end`, async () => {
      // The window closes 100 ms after the last connection; a test process slower than that to
      // pause the server finds it closed (every write refused, which is right but proves nothing),
      // so such a round is repeated.
      for (let round = 1; round <= PAUSE_ROUNDS; round++) {
        const outcomes = await writesWhilePausedPastTheWindow(env, children);
        if (outcomes.every((outcome) => outcome.status === 'rejected' && (outcome.reason as NodeJS.ErrnoException).code === 'ECONNREFUSED')) continue;
        const failed = failures(outcomes);
        const server = children.at(-1)!;
        assert.deepEqual(failed, [], `${failed.join('\n')}\nthe server's log:\n${server.lines.slice(-30).join('\n')}`);
        assert.equal(await server.exited, 0, server.lines.slice(-10).join('\n'));
        return;
      }
      assert.fail(`in ${PAUSE_ROUNDS} rounds the accept window had always closed before the server was paused`);
    });
  });
}
