import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { databaseKinds, freshPostgresDatabase } from '../helpers/test-app.js';
import { adminToken, request, serverPorts, startServer, type ChildServer } from './harness.js';
import { prefilledPgliteDirectory } from '../helpers/pglite-snapshot.js';

/**
 * SIGTERM with writes in flight, on separate connections (some accepted but not yet parsed when
 * the signal lands): every one is answered 201, the process exits 0, and the writes are all there
 * after a restart on the same database.
 */

const WRITES = 20;

for (const kind of databaseKinds()) {
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
      await server.waitForLine(/"msg":"ready: /);
      const token = await adminToken(server.idpUrl);

      const names = Array.from({ length: WRITES }, () => `shutdown-${randomUUID()}`);
      // The signal lands once every connection is established (the server may not have read them yet).
      let connected = 0;
      let allConnected!: () => void;
      const established = new Promise<void>((resolve) => { allConnected = resolve; });
      const onConnect = () => { if (++connected === WRITES) allConnected(); };
      const writes = names.map((name) => request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name }, onConnect }));
      await established;
      await server.waitForLine(/"msg":"incoming request"/);
      server.process.kill('SIGTERM');
      const answers = await Promise.all(writes);
      assert.deepEqual(answers.map((answer) => answer.status), names.map(() => 201), JSON.stringify(answers.filter((a) => a.status !== 201).map((a) => a.body)));
      assert.equal(await server.exited, 0, server.lines.slice(-10).join('\n'));
      assert.ok(server.lines.some((line) => line.includes('"msg":"stopped"')));

      const again = startServer(env, ports);
      children.push(again);
      await again.waitForLine(/"msg":"ready: /);
      const freshToken = await adminToken(again.idpUrl);
      for (const answer of answers) {
        const found = await request(`${again.apiUrl}/v1/groups/${answer.body.id}`, { token: freshToken });
        assert.equal(found.status, 200, `group ${answer.body.name} after the restart`);
      }
      again.process.kill('SIGTERM');
      assert.equal(await again.exited, 0);
    });
  });
}
