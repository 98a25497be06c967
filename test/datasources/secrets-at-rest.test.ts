import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import type { AppContext } from '../../src/context.js';
import type { DatabaseTarget } from '../../src/db/client.js';
import { SecretKeyRing, SecretUnreadableError, keyId, secretKey } from '../../src/db/secrets.js';
import { GENERATED_KEY_FILE } from '../../src/db/secrets-keys.js';
import { DataSourceSecretError, openedSourceConfiguration } from '../../src/modules/datasources/index.js';
import { ADMIN_EMAIL, DEV_PASSWORD, databaseKinds, freshPostgresDatabase, testIdp, type TestApp } from '../helpers/test-app.js';
import { requestsOf } from '../helpers/requests.js';
import { uniqueName } from '../helpers/factories.js';
import { migratedPgliteSnapshot } from '../helpers/pglite-snapshot.js';

/**
 * Data source secrets at rest (the contract's "Secrets at rest"): passwords and secret headers are
 * stored sealed with AES-256-GCM, answers mask them, the runtime opens them; keys rotate with
 * SECRETS_KEY_PREVIOUS, values in clear from before are sealed at the next start, a wrong key or
 * an altered value is refused. Each restart is a real one: a new context on the same database.
 */

type Json = Record<string, any>;
const MASK = '********';
const SEALED = /^enc:v1:[A-Za-z0-9_-]{8}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]*$/;
const newKey = () => randomBytes(32);
const b64 = (key: Buffer) => key.toString('base64');

describe('secret key ring', () => {
  const a = secretKey(newKey());
  const b = secretKey(newKey());

  it('seals to enc:v1:<key id>:<iv>:<tag>:<ciphertext>, a fresh IV each time, and opens to the original', () => {
    const ring = new SecretKeyRing(a);
    for (const clear of ['p', '', 'pässwörd 🔑 with : colons', 'x'.repeat(5000)]) {
      const one = ring.seal(clear);
      const two = ring.seal(clear);
      assert.match(one, SEALED);
      assert.ok(one.startsWith(`enc:v1:${a.id}:`));
      assert.notEqual(one, two, 'a random IV per value');
      if (clear.length > 3) assert.ok(!one.includes(clear) && !one.includes(Buffer.from(clear).toString('base64url')));
      assert.equal(ring.open(one), clear);
      assert.equal(ring.open(two), clear);
    }
  });

  it('opens with any key of the ring, seals with the current one only', () => {
    const old = new SecretKeyRing(a).seal('s');
    const rotated = new SecretKeyRing(b, [a]);
    assert.equal(rotated.open(old), 's');
    assert.equal(rotated.isCurrent(old), false);
    const fresh = rotated.seal('s');
    assert.ok(fresh.startsWith(`enc:v1:${b.id}:`));
    assert.equal(rotated.isCurrent(fresh), true);
  });

  it('refuses, never answering garbage, a value of a key it does not hold', () => {
    const sealed = new SecretKeyRing(a).seal('s');
    assert.throws(() => new SecretKeyRing(b).open(sealed), (error: Error) =>
      error instanceof SecretUnreadableError && error.message.includes(a.id) && /SECRETS_KEY_PREVIOUS/.test(error.message));
  });

  it('refuses a value altered in any part (the GCM tag), and one whose key id was swapped', () => {
    const ring = new SecretKeyRing(a, [b]);
    const sealed = ring.seal('a secret of some length');
    const parts = sealed.split(':');
    const flip = (text: string) => {
      const bytes = Buffer.from(text, 'base64url');
      bytes[0] = bytes[0]! ^ 1;
      return bytes.toString('base64url');
    };
    for (const index of [3, 4, 5]) {
      const altered = parts.map((part, i) => (i === index ? flip(part) : part)).join(':');
      assert.throws(() => ring.open(altered), (error: Error) => error instanceof SecretUnreadableError && /altered/.test(error.message), `part ${index}`);
    }
    // The header is authenticated: naming the other key of the ring does not open it with that key.
    const swapped = ['enc', 'v1', b.id, ...parts.slice(3)].join(':');
    assert.throws(() => ring.open(swapped), SecretUnreadableError);
    assert.throws(() => ring.open('enc:v1:short'), SecretUnreadableError);
  });

  it('names keys by a short hash that does not give the key away', () => {
    assert.match(a.id, /^[A-Za-z0-9_-]{8}$/);
    assert.equal(keyId(a.bytes), a.id);
    assert.notEqual(a.id, b.id);
    assert.ok(!b64(a.bytes).includes(a.id));
  });
});

interface Running { ctx: AppContext; app: FastifyInstance; warnings: string[]; close(): Promise<void> }

for (const kind of databaseKinds(import.meta.url)) {
  describe(`data source secrets at rest (${kind})`, () => {
    let target: DatabaseTarget;
    let cleanup: (() => Promise<void>) | null = null;
    let idpUrl: string;
    let adminToken: string;
    let running: Running | null = null;

    const stop = async () => {
      const was = running;
      running = null;
      await was?.close();
    };

    before(async () => {
      idpUrl = (await testIdp()).url;
      const response = await fetch(`${idpUrl}/realms/platform/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: ADMIN_EMAIL, password: DEV_PASSWORD }),
      });
      adminToken = ((await response.json()) as { access_token: string }).access_token;
    });
    after(async () => {
      await stop();
      await cleanup?.();
    });

    /** Each test starts on a database of its own: the keys of one would not open the values of another. */
    const freshDatabase = async () => {
      await stop();
      await cleanup?.();
      if (kind === 'postgres') {
        const database = await freshPostgresDatabase();
        target = { url: database.url, dataDir: null, poolSize: 5 };
        cleanup = database.drop;
      } else {
        const dir = mkdtempSync(path.join(tmpdir(), 'secrets-at-rest-'));
        target = { url: null, dataDir: path.join(dir, 'data'), pgliteSnapshot: await migratedPgliteSnapshot() };
        cleanup = async () => rmSync(dir, { recursive: true, force: true });
      }
    };

    /** Starts the service on the test's database with these settings (after stopping the one running). */
    const start = async (env: Record<string, string> = {}): Promise<Running> => {
      await stop();
      const warnings: string[] = [];
      const config = loadConfig({ IDP_URL: idpUrl, LOG_LEVEL: 'silent', ...env });
      const ctx = await createContext(config, target, { warn: (_details, message) => { warnings.push(message); } });
      const app = await buildApp(ctx);
      await app.ready();
      const started = { ctx, app, warnings, close: async () => { await app.close(); await ctx.db.destroy(); } };
      running = started;
      return started;
    };
    /** The start fails: the error it fails with (createContext closes the database again). */
    const failedStart = async (env: Record<string, string>): Promise<Error> => {
      await stop();
      try {
        await createContext(loadConfig({ IDP_URL: idpUrl, LOG_LEVEL: 'silent', ...env }), target);
      } catch (error) {
        return error as Error;
      }
      assert.fail('the start should have failed');
    };

    const { call, ok } = requestsOf(() => ({ app: running!.app, adminToken }) as unknown as TestApp);
    const raw = async (id: string) =>
      (await running!.ctx.db.selectFrom('data_sources').select('configuration').where('id', '=', id).executeTakeFirstOrThrow()).configuration as Json;
    const setRaw = (id: string, configuration: Json) =>
      running!.ctx.db.updateTable('data_sources').set({ configuration: JSON.stringify(configuration) }).where('id', '=', id).execute();
    const opened = async (id: string) => (await openedSourceConfiguration(running!.ctx.db, running!.ctx.secrets, id))!.configuration as Json;

    const CLEAR = ['mqtt-pw-1', 'http-pw-2', 'Bearer abc.def', 'cookie=3', 'key-4', 'sql-pw-5'];
    /** One data source of each connector with every kind of secret. */
    const createSources = async () => ({
      mqtt: await ok('POST', '/v1/datasources', { name: uniqueName('S'), connectorType: 'MQTT', configuration: { urls: ['tcp://b:1883'], user: 'u', password: 'mqtt-pw-1' } }, 201),
      http: await ok('POST', '/v1/datasources', { name: uniqueName('S'), connectorType: 'HTTP', configuration: {
        url: 'https://example.com', password: 'http-pw-2', headers: { Authorization: 'Bearer abc.def', Cookie: 'cookie=3', 'X-Api-Key': 'key-4', Accept: 'application/json' },
      } }, 201),
      sql: await ok('POST', '/v1/datasources', { name: uniqueName('S'), connectorType: 'SQL', configuration: { dsn: 'postgres://reader:sql-pw-5@db/city' } }, 201),
    });
    const idsOf = (sources: Json) => [sources.mqtt.id, sources.http.id, sources.sql.id] as string[];
    const assertSealed = async (ids: string[], key?: Buffer) => {
      for (const id of ids) {
        const row = await raw(id);
        const text = JSON.stringify(row);
        for (const clear of CLEAR) assert.ok(!text.includes(clear), `${clear} in clear in ${text}`);
        const secrets = [row['password'], ...Object.entries(row['headers'] ?? {}).filter(([name]) => name !== 'Accept').map(([, value]) => value)];
        for (const secret of secrets) {
          assert.match(secret, SEALED);
          if (key) assert.ok(secret.startsWith(`enc:v1:${keyId(key)}:`), `sealed with the expected key: ${secret}`);
        }
      }
    };
    const assertOpened = async (sources: Json) => {
      assert.equal((await opened(sources.mqtt.id))['password'], 'mqtt-pw-1');
      const http = await opened(sources.http.id);
      assert.deepEqual([http['password'], http['headers']], ['http-pw-2', { Authorization: 'Bearer abc.def', Cookie: 'cookie=3', 'X-Api-Key': 'key-4', Accept: 'application/json' }]);
      const sql = await opened(sources.sql.id);
      assert.deepEqual([sql['user'], sql['password']], ['reader', 'sql-pw-5']);
    };

    it('stores passwords and secret headers sealed, never in clear; answers mask them; the runtime opens the originals', async () => {
      await freshDatabase();
      const keyA = newKey();
      await start({ SECRETS_KEY: b64(keyA) });
      const sources = await createSources();
      await assertSealed(idsOf(sources), keyA);
      assert.equal((await raw(sources.http.id))['headers']['Accept'], 'application/json', 'other headers stay readable');
      for (const source of Object.values(sources)) {
        const answer = await ok('GET', `/v1/datasources/${source.id}`);
        assert.equal(answer.configuration.password, MASK);
        for (const clear of CLEAR) assert.ok(!JSON.stringify(answer).includes(clear));
        assert.ok(!JSON.stringify(answer).includes('enc:v1:'), 'the sealed form is not answered either');
      }
      assert.deepEqual((await ok('GET', `/v1/datasources/${sources.http.id}`)).configuration.headers,
        { Authorization: MASK, Cookie: MASK, 'X-Api-Key': MASK, Accept: 'application/json' });
      await assertOpened(sources);
      assert.equal(await openedSourceConfiguration(running!.ctx.db, running!.ctx.secrets, '00000000-0000-4000-8000-000000000000'), null);

      // A password in the DSN's query string (libpq reads it there too) moves to `password` as well.
      const inQuery = await ok('POST', '/v1/datasources', { name: uniqueName('S'), connectorType: 'SQL', configuration: { dsn: 'postgres://db/city?sslmode=require&password=q%2Bpw+x&application_name=a' } }, 201);
      assert.deepEqual([inQuery.configuration.dsn, inQuery.configuration.password], ['postgres://db/city?sslmode=require&application_name=a', MASK]);
      assert.ok(!JSON.stringify(await raw(inQuery.id)).includes('q%2Bpw'));
      assert.match((await raw(inQuery.id))['password'], SEALED);
      assert.equal((await opened(inQuery.id))['password'], 'q+pw x');
    });

    it('keeps a secret written back as ******** (the same sealed value, opening to the original); a new value is sealed anew', async () => {
      await freshDatabase();
      await start({ SECRETS_KEY: b64(newKey()) });
      const { http } = await createSources();
      const before = await raw(http.id);
      const read = await ok('GET', `/v1/datasources/${http.id}`);
      await ok('PUT', `/v1/datasources/${http.id}`, { name: read.name, connectorType: 'HTTP', configuration: read.configuration });
      await ok('PATCH', `/v1/datasources/${http.id}`, { configuration: { password: MASK, interval: '5m' } });
      await ok('PATCH', `/v1/datasources/${http.id}`, { configuration: { headers: { authorization: MASK, Cookie: MASK, 'X-Api-Key': MASK, Accept: 'text/plain' } } });
      const after = await raw(http.id);
      assert.equal(after['password'], before['password']);
      assert.deepEqual([after['headers']['authorization'], after['headers']['Cookie']], [before['headers']['Authorization'], before['headers']['Cookie']]);
      const kept = await opened(http.id);
      assert.deepEqual([kept['password'], kept['headers']['authorization'], kept['headers']['X-Api-Key'], kept['interval']], ['http-pw-2', 'Bearer abc.def', 'key-4', '5m']);

      await ok('PATCH', `/v1/datasources/${http.id}`, { configuration: { password: 'changed-pw' } });
      const changed = await raw(http.id);
      assert.match(changed['password'], SEALED);
      assert.notEqual(changed['password'], before['password']);
      assert.ok(!JSON.stringify(changed).includes('changed-pw'));
      assert.equal((await opened(http.id))['password'], 'changed-pw');

      const bad = await call('PATCH', `/v1/datasources/${http.id}`, { configuration: { password: 42, headers: { Authorization: 7 } } });
      assert.equal(bad.statusCode, 400);
      assert.ok(!bad.body.includes('enc:v1:') && !bad.body.includes('changed-pw'), 'nor through a refusal');
    });

    it('rotation: written with key A, a start with SECRETS_KEY=B and SECRETS_KEY_PREVIOUS=A opens them and re-seals them with B', async () => {
      await freshDatabase();
      const keyA = newKey();
      const keyB = newKey();
      await start({ SECRETS_KEY: b64(keyA) });
      const sources = await createSources();
      const modifiedAt = (await ok('GET', `/v1/datasources/${sources.http.id}`)).modifiedAt;
      await assertSealed(idsOf(sources), keyA);

      await start({ SECRETS_KEY: b64(keyB), SECRETS_KEY_PREVIOUS: b64(keyA) });
      await assertSealed(idsOf(sources), keyB);
      await assertOpened(sources);
      assert.equal((await ok('GET', `/v1/datasources/${sources.http.id}`)).modifiedAt, modifiedAt, 're-sealing changes nothing a client sees');
      const resealed = JSON.stringify(await raw(sources.http.id));

      // Idempotent: the next start finds nothing to do; and B alone now opens everything.
      await start({ SECRETS_KEY: b64(keyB) });
      assert.equal(JSON.stringify(await raw(sources.http.id)), resealed);
      await assertOpened(sources);
    });

    it('a start whose keys open no value fails with a clear error naming the data source and the settings, and changes nothing', async () => {
      await freshDatabase();
      const keyA = newKey();
      await start({ SECRETS_KEY: b64(keyA) });
      const { mqtt } = await createSources();
      const sealed = await raw(mqtt.id);
      const error = await failedStart({ SECRETS_KEY: b64(newKey()) });
      assert.ok(error instanceof DataSourceSecretError, String(error));
      assert.match(error.message, new RegExp(`data source [0-9a-f-]{36}: configuration\\.[\\w.-]+ cannot be opened: sealed with the key ${keyId(keyA)}`));
      assert.match(error.message, /SECRETS_KEY_PREVIOUS/);
      for (const clear of CLEAR) assert.ok(!error.message.includes(clear));
      // The right key still opens everything: the failed start re-sealed nothing with the wrong one.
      await start({ SECRETS_KEY: b64(keyA) });
      assert.deepEqual(await raw(mqtt.id), sealed);
      assert.equal((await opened(mqtt.id))['password'], 'mqtt-pw-1');
    });

    it('a clear value from before sealing is sealed at the next start', async () => {
      await freshDatabase();
      const key = newKey();
      await start({ SECRETS_KEY: b64(key) });
      const { http } = await createSources();
      // As a database from before this change holds it.
      await setRaw(http.id, { url: 'https://example.com', password: 'http-pw-2', headers: { Authorization: 'Bearer abc.def', Accept: 'application/json' } });
      assert.equal((await raw(http.id))['password'], 'http-pw-2');
      await start({ SECRETS_KEY: b64(key) });
      const row = await raw(http.id);
      assert.ok(!JSON.stringify(row).includes('http-pw-2') && !JSON.stringify(row).includes('abc.def'), JSON.stringify(row));
      assert.match(row['password'], SEALED);
      assert.match(row['headers']['Authorization'], SEALED);
      const open = await opened(http.id);
      assert.deepEqual([open['password'], open['headers']], ['http-pw-2', { Authorization: 'Bearer abc.def', Accept: 'application/json' }]);
    });

    it('refuses an altered ciphertext (GCM tag): at run time and at the next start', async () => {
      await freshDatabase();
      const key = newKey();
      await start({ SECRETS_KEY: b64(key) });
      const { mqtt } = await createSources();
      const row = await raw(mqtt.id);
      const parts = (row['password'] as string).split(':');
      const ciphertext = Buffer.from(parts[5]!, 'base64url');
      ciphertext[0] = ciphertext[0]! ^ 0x20;
      await setRaw(mqtt.id, { ...row, password: [...parts.slice(0, 5), ciphertext.toString('base64url')].join(':') });
      await assert.rejects(openedSourceConfiguration(running!.ctx.db, running!.ctx.secrets, mqtt.id),
        (error: Error) => error instanceof DataSourceSecretError && error.message.includes(mqtt.id) && /configuration\.password/.test(error.message) && /altered/.test(error.message));
      const error = await failedStart({ SECRETS_KEY: b64(key) });
      assert.ok(error instanceof DataSourceSecretError && /altered/.test(error.message), String(error));
    });

    it('without SECRETS_KEY: a key generated at the first start, kept with the database, a warning saying where; SECRETS_KEY set later takes over', async () => {
      await freshDatabase();
      const first = await start();
      const warning = first.warnings.find((message) => /SECRETS_KEY is not set/.test(message));
      assert.ok(warning, `warnings: ${first.warnings.join(' | ')}`);
      if (kind === 'postgres') {
        assert.match(warning, /in the database \(table secrets_keys\)/);
        const rows = await first.ctx.db.selectFrom('secrets_keys').select('key').execute();
        assert.equal(rows.length, 1);
        assert.equal(first.ctx.secrets.current.id, keyId(Buffer.from(rows[0]!.key)));
      } else {
        const file = path.join(target.dataDir!, GENERATED_KEY_FILE);
        assert.ok(warning.includes(file), warning);
        assert.equal(statSync(file).mode & 0o777, 0o600);
      }
      const sources = await createSources();
      await assertSealed(idsOf(sources));
      const generatedId = first.ctx.secrets.current.id;

      const again = await start();
      assert.equal(again.ctx.secrets.current.id, generatedId, 'the same key at the next start');
      await assertOpened(sources);

      // An operator sets SECRETS_KEY: the generated key still opens, everything moves to the new key, no warning.
      const chosen = newKey();
      const moved = await start({ SECRETS_KEY: b64(chosen) });
      assert.ok(!moved.warnings.some((message) => /SECRETS_KEY is not set/.test(message)));
      await assertSealed(idsOf(sources), chosen);
      await assertOpened(sources);
    });

    if (kind === 'postgres') {
      it('concurrent starts during a rotation both succeed, and both open every value, now sealed with the new key', async () => {
        await freshDatabase();
        const keyA = newKey();
        const keyB = newKey();
        await start({ SECRETS_KEY: b64(keyA) });
        const sources = await createSources();
        await stop();
        const env = { IDP_URL: idpUrl, LOG_LEVEL: 'silent', SECRETS_KEY: b64(keyB), SECRETS_KEY_PREVIOUS: b64(keyA) };
        const contexts = await Promise.all([createContext(loadConfig(env), target), createContext(loadConfig(env), target)]);
        try {
          for (const ctx of contexts) {
            const http = await openedSourceConfiguration(ctx.db, ctx.secrets, sources.http.id);
            assert.equal(http!.configuration['password'], 'http-pw-2');
          }
          const row = await contexts[0].db.selectFrom('data_sources').select('configuration').where('id', '=', sources.mqtt.id).executeTakeFirstOrThrow();
          assert.ok((row.configuration as Json)['password'].startsWith(`enc:v1:${keyId(keyB)}:`));
        } finally {
          for (const ctx of contexts) await ctx.db.destroy();
        }
      });
    }
  });
}
