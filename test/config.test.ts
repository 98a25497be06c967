import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { describeRedisAddress } from '../src/util/redis-address.js';

/** The contract's "Processes, hosts and configuration": defaults, derived values, one clear error. */

/** Asserts that loading `env` fails with a one-line ConfigError naming `setting`. */
function assertRejects(env: Record<string, string>, setting: string) {
  assert.throws(() => loadConfig(env), (error: unknown) => {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.match(error.message, new RegExp(`\\b${setting}\\b`));
    assert.doesNotMatch(error.message, /\n/);
    return true;
  });
}

describe('configuration', () => {
  describe('secrets keys', () => {
    it('are unset by default (a key is generated with the database)', () => {
      assert.deepEqual(loadConfig({}).secrets, { key: null, previousKey: null });
    });

    it('take 32 bytes in base64, standard or URL alphabet, padded or not', () => {
      const key = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 250));
      for (const text of [key.toString('base64'), key.toString('base64').replace(/=$/, ''), key.toString('base64url')]) {
        const config = loadConfig({ SECRETS_KEY: text, SECRETS_KEY_PREVIOUS: text });
        assert.deepEqual([config.secrets.key, config.secrets.previousKey], [key, key], text);
      }
    });
  });

  describe('defaults', () => {
    const config = loadConfig({});

    it('listens on 8080, 8081 and 8090 with localhost URLs', () => {
      assert.equal(config.api.port, 8080);
      assert.equal(config.api.baseUrl, 'http://localhost:8080');
      assert.equal(config.dataApi.port, 8081);
      assert.equal(config.dataApi.baseUrl, 'http://localhost:8081');
      assert.equal(config.idp.port, 8090);
      assert.equal(config.idp.url, 'http://localhost:8090');
    });

    it('accepts the development identity provider tokens out of the box', () => {
      assert.equal(config.oidc.issuer, 'http://localhost:8090/realms/platform');
      assert.equal(config.oidc.clientId, 'api-access');
      assert.equal(config.idp.enabled, true);
      assert.equal(config.idp.password, 'dev');
      assert.equal(config.idp.tokenTtlSeconds, 300);
    });

    it('runs on embedded PGlite in ./data', () => {
      assert.equal(config.database.url, null);
      assert.equal(config.database.dataDir, './data');
    });

    it('bootstraps admin@example.com into the tenant "default" with a generated id', () => {
      assert.equal(config.bootstrap.adminEmail, 'admin@example.com');
      assert.equal(config.bootstrap.tenantName, 'default');
      assert.equal(config.bootstrap.tenantId, null);
    });

    it('has no CORS origins, log level info, and is not production', () => {
      assert.deepEqual(config.dataApi.corsOrigins, []);
      assert.equal(config.logLevel, 'info');
      assert.equal(config.production, false);
    });

    it('treats empty values as unset', () => {
      const empty = loadConfig({ PORT: '', DATABASE_URL: '', OIDC_CLIENT_ID: '' });
      assert.equal(empty.api.port, 8080);
      assert.equal(empty.database.url, null);
      assert.equal(empty.oidc.clientId, 'api-access');
    });

    it('ignores variables it does not know', () => {
      assert.doesNotThrow(() => loadConfig({ SOMETHING_ELSE: 'x', PATH: '/usr/bin' }));
    });
  });

  describe('derived values', () => {
    it('derives BASE_URL, DATA_API_URL and IDP_URL from the ports', () => {
      const config = loadConfig({ PORT: '9000', DATA_PORT: '9001', IDP_PORT: '9002' });
      assert.equal(config.api.port, 9000);
      assert.equal(config.api.baseUrl, 'http://localhost:9000');
      assert.equal(config.dataApi.baseUrl, 'http://localhost:9001');
      assert.equal(config.idp.url, 'http://localhost:9002');
      assert.equal(config.oidc.issuer, 'http://localhost:9002/realms/platform');
    });

    it('derives OIDC_ISSUER from IDP_URL, without a trailing slash', () => {
      const config = loadConfig({ IDP_URL: 'https://idp.example.org/' });
      assert.equal(config.idp.url, 'https://idp.example.org');
      assert.equal(config.oidc.issuer, 'https://idp.example.org/realms/platform');
    });

    it('keeps explicit URLs and issuer as given (trailing slash dropped)', () => {
      const config = loadConfig({
        BASE_URL: 'https://api.example.org/',
        DATA_API_URL: 'https://data.example.org',
        OIDC_ISSUER: 'https://keycloak.example.org/realms/city',
        OIDC_CLIENT_ID: 'city-api',
      });
      assert.equal(config.api.baseUrl, 'https://api.example.org');
      assert.equal(config.dataApi.baseUrl, 'https://data.example.org');
      assert.equal(config.oidc.issuer, 'https://keycloak.example.org/realms/city');
      assert.equal(config.oidc.clientId, 'city-api');
    });

    it('reads DATABASE_URL, DATA_DIR, TENANT_ID, TENANT_NAME, BOOTSTRAP_ADMIN_EMAIL, CORS_ORIGINS and LOG_LEVEL', () => {
      const config = loadConfig({
        DATABASE_URL: 'postgres://user:secret@db.example.org:5432/platform',
        DATA_DIR: '/var/lib/platform',
        TENANT_ID: '0b9c6a3e-7c59-4d0e-9a35-2f2c7e8d1a11',
        TENANT_NAME: 'City of Examples',
        BOOTSTRAP_ADMIN_EMAIL: 'Root@Example.ORG',
        CORS_ORIGINS: 'https://a.example.org, https://b.example.org,,',
        LOG_LEVEL: 'debug',
      });
      assert.equal(config.database.url, 'postgres://user:secret@db.example.org:5432/platform');
      assert.equal(config.database.dataDir, '/var/lib/platform');
      assert.equal(config.bootstrap.tenantId, '0b9c6a3e-7c59-4d0e-9a35-2f2c7e8d1a11');
      assert.equal(config.bootstrap.tenantName, 'City of Examples');
      assert.equal(config.bootstrap.adminEmail, 'root@example.org');
      assert.deepEqual(config.dataApi.corsOrigins, ['https://a.example.org', 'https://b.example.org']);
      assert.equal(config.logLevel, 'debug');
    });

    it('accepts postgresql:// as well as postgres://', () => {
      assert.equal(loadConfig({ DATABASE_URL: 'postgresql://localhost/platform' }).database.url, 'postgresql://localhost/platform');
    });

    it('disables the development identity provider when NODE_ENV=production', () => {
      const config = loadConfig({ NODE_ENV: 'production' });
      assert.equal(config.production, true);
      assert.equal(config.idp.enabled, false);
    });

    it('disables the development identity provider when DEV_IDP=off', () => {
      const config = loadConfig({ DEV_IDP: 'off' });
      assert.equal(config.production, false);
      assert.equal(config.idp.enabled, false);
      assert.equal(loadConfig({ DEV_IDP: 'on' }).idp.enabled, true);
    });

    it('runs background work in api and all processes unless BACKGROUND_WORK=off', () => {
      assert.equal(loadConfig({}).backgroundWork, true);
      assert.equal(loadConfig({ BACKGROUND_WORK: 'off' }).backgroundWork, false);
    });

    it('trusts no proxy by default; TRUST_PROXY takes a hop count or addresses and CIDRs', () => {
      assert.equal(loadConfig({}).trustProxy, null);
      assert.deepEqual(loadConfig({ TRUST_PROXY: '2' }).trustProxy, { hops: 2 });
      assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1, fd00::/8,loopback' }).trustProxy,
        { addresses: ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', 'loopback'] });
    });
  });

  describe('invalid values stop the start with one line naming the setting', () => {
    it('TRUST_PROXY that is no hop count from 1 to 10 nor a list of addresses (true would trust any client)', () => {
      for (const value of ['0', '11', 'true', '10.0.0.0/33', '999.1.1.1', 'proxy.example', '10.0.0.1,,x', '1.2.3.4/8/1']) assertRejects({ TRUST_PROXY: value }, 'TRUST_PROXY');
    });

    it('BACKGROUND_WORK other than on/off', () => {
      assertRejects({ BACKGROUND_WORK: 'yes' }, 'BACKGROUND_WORK');
    });

    it('PORT that is not a number or out of range', () => {
      assertRejects({ PORT: 'abc' }, 'PORT');
      assertRejects({ PORT: '70000' }, 'PORT');
      assertRejects({ PORT: '-1' }, 'PORT');
      assertRejects({ PORT: '80.5' }, 'PORT');
    });

    it('DATA_PORT and IDP_PORT out of range', () => {
      assertRejects({ DATA_PORT: '65536' }, 'DATA_PORT');
      assertRejects({ IDP_PORT: 'eighty' }, 'IDP_PORT');
    });

    it('DATABASE_URL that is not a PostgreSQL URL', () => {
      assertRejects({ DATABASE_URL: 'mysql://localhost/db' }, 'DATABASE_URL');
      assertRejects({ DATABASE_URL: 'localhost:5432' }, 'DATABASE_URL');
    });

    it('LOG_LEVEL that is not a level', () => {
      assertRejects({ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL');
    });

    it('URLs that are not http(s) URLs', () => {
      assertRejects({ BASE_URL: 'localhost:8080' }, 'BASE_URL');
      assertRejects({ IDP_URL: 'ftp://idp' }, 'IDP_URL');
      assertRejects({ OIDC_ISSUER: 'not a url' }, 'OIDC_ISSUER');
      assertRejects({ DATA_API_URL: 'http://' }, 'DATA_API_URL');
    });

    it('TENANT_ID that is not a UUID and BOOTSTRAP_ADMIN_EMAIL that is not an email', () => {
      assertRejects({ TENANT_ID: 'tenant-1' }, 'TENANT_ID');
      assertRejects({ BOOTSTRAP_ADMIN_EMAIL: 'admin' }, 'BOOTSTRAP_ADMIN_EMAIL');
    });

    it('DEV_IDP other than on/off and DEV_IDP_TTL out of range', () => {
      assertRejects({ DEV_IDP: 'maybe' }, 'DEV_IDP');
      assertRejects({ DEV_IDP_TTL: '5' }, 'DEV_IDP_TTL');
    });

    it('SECRETS_KEY and SECRETS_KEY_PREVIOUS that are not 32 bytes of base64, without echoing the value', () => {
      const cases = [
        'not base64 at all!!',
        Buffer.alloc(16, 7).toString('base64'), // 16 bytes
        Buffer.alloc(33, 7).toString('base64'), // 33 bytes
        Buffer.alloc(31, 7).toString('base64'), // 31 bytes
        `${Buffer.alloc(32, 7).toString('base64').slice(0, 42)}B=`, // 32 bytes with stray bits in the last character
      ];
      for (const setting of ['SECRETS_KEY', 'SECRETS_KEY_PREVIOUS']) {
        for (const value of cases) {
          assertRejects({ [setting]: value }, setting);
          assert.throws(() => loadConfig({ [setting]: value }), (error: Error) => !error.message.includes(value), value);
        }
      }
    });

    it('does not echo a DATABASE_URL password in the error', () => {
      assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://user:hunter2@db/x' }), (error: Error) => {
        assert.doesNotMatch(error.message, /hunter2/);
        return true;
      });
    });
  });
  describe('MQTT_CLUSTER', () => {
    it('is unset by default: PostgreSQL alone', () => {
      assert.equal(loadConfig({}).mqtt.cluster, null);
    });

    it('takes one server by its redis:// or rediss:// URL', () => {
      assert.deepEqual(loadConfig({ MQTT_CLUSTER: 'redis://:secret@redis.internal:6380/2' }).mqtt.cluster, { kind: 'server', url: 'redis://:secret@redis.internal:6380/2' });
      assert.deepEqual(loadConfig({ MQTT_CLUSTER: ' rediss://cache.example:6380 ' }).mqtt.cluster, { kind: 'server', url: 'rediss://cache.example:6380' });
    });

    it('takes a Sentinel deployment: the sentinels\' addresses (port 26379 unless given), the master\'s name, its database and credentials', () => {
      assert.deepEqual(loadConfig({ MQTT_CLUSTER: 'redis-sentinel://app:p%40ss@s1.internal,s2.internal:26380,[::1]:26381/mqtt-master/3?sentinelPassword=watch' }).mqtt.cluster, {
        kind: 'sentinel',
        sentinels: [{ host: 's1.internal', port: 26379 }, { host: 's2.internal', port: 26380 }, { host: '::1', port: 26381 }],
        name: 'mqtt-master', db: 3, username: 'app', password: 'p@ss', sentinelPassword: 'watch', tls: false,
      });
      assert.deepEqual(loadConfig({ MQTT_CLUSTER: 'rediss-sentinel://:secret@10.0.0.5/mymaster' }).mqtt.cluster, {
        kind: 'sentinel', sentinels: [{ host: '10.0.0.5', port: 26379 }], name: 'mymaster', db: 0, username: null, password: 'secret', sentinelPassword: null, tls: true,
      });
    });

    it('refuses anything else with one line naming MQTT_CLUSTER', () => {
      for (const value of [
        'localhost:6379', 'http://redis:6379', 'redis-sentinel://s1:26379', 'redis-sentinel://s1:26379/', 'redis-sentinel://s1:99999/m',
        'redis-sentinel://s1 s2/m', 'redis-sentinel://s1/m/x', 'redis-sentinel://s1/m?password=x', 'redis-sentinel://s1/%zz',
        `redis-sentinel://${Array.from({ length: 17 }, (_, i) => `s${i}`).join(',')}/m`,
      ]) assertRejects({ MQTT_CLUSTER: value }, 'MQTT_CLUSTER');
    });

    it('is logged without its passwords', () => {
      const sentinel = loadConfig({ MQTT_CLUSTER: 'redis-sentinel://app:hunter2@s1,s2:26380/m?sentinelPassword=watch' }).mqtt.cluster!;
      assert.equal(describeRedisAddress(sentinel), 'redis-sentinel://***@s1:26379,s2:26380/m/0');
      assert.equal(describeRedisAddress(loadConfig({ MQTT_CLUSTER: 'redis://:hunter2@r:6379' }).mqtt.cluster!), 'redis://:***@r:6379');
    });
  });
});
