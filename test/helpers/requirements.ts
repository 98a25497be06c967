import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { locateMapServer } from '../../src/ows/mapserver-pool.js';

/**
 * What some tests need from the machine beyond Node and npm (MapServer, GDAL, PostGIS, Mosquitto).
 * Each check answers null when the thing is there, or the reason to skip, ending in
 * "(Debian packages: …)" when installing packages is the cure: scripts/test.mjs gathers those into
 * the one install line that closes a run's account of its skips. A file passes the answers to
 * `missing()` for node:test's `skip` option:
 *
 *   describe('WFS through the gateway', { skip: missing(requireMapServer(), await requirePostgis()) }, …)
 *
 * TEST_PRETEND_MISSING=mapserver,gdal,postgis,mosquitto makes these checks answer as they would on
 * a machine without those, to see what a fresh machine's run skips and says, on one that has them.
 */

const PRETENDABLE = ['mapserver', 'gdal', 'postgis', 'mosquitto'] as const;
type Pretendable = (typeof PRETENDABLE)[number];

/** The broker the MQTT tests talk to (Debian's mosquitto listens there with its stock configuration). */
export const MQTT_BROKER = { host: '127.0.0.1', port: 1883, url: 'mqtt://127.0.0.1:1883' } as const;

/** How long the broker probe waits for a CONNACK: a broker on the loopback answers in milliseconds, but a busy machine may hold the probe back. */
const BROKER_PROBE_MS = 5_000;

function pretendedMissing(): Set<Pretendable> {
  const names = (process.env['TEST_PRETEND_MISSING'] ?? '').split(',').map((name) => name.trim().toLowerCase()).filter(Boolean);
  const unknown = names.filter((name) => !(PRETENDABLE as readonly string[]).includes(name));
  // A typo would silently pretend nothing: fail the file instead, naming what is understood.
  if (unknown.length > 0) throw new Error(`TEST_PRETEND_MISSING: unknown ${unknown.join(', ')} (known: ${PRETENDABLE.join(', ')})`);
  return new Set(names as Pretendable[]);
}

const PRETENDED = ' [pretended by TEST_PRETEND_MISSING]';
const pretending = (thing: Pretendable) => pretendedMissing().has(thing);

/**
 * `npm run test:quick` (TEST_QUICK set) is the inner loop: PGlite only, and no external program.
 * Every check below of such a program answers this reason there, whether or not it is installed.
 * Read at each check, so that the checks' own tests can ask them as npm test would.
 */
const quickLoop = (): string | null => (process.env['TEST_QUICK'] ? 'left out of the quick loop (npm test runs it)' : null);

/** Joins the reasons that are not null, for node:test's `skip` option; false when nothing is missing. */
export function missing(...reasons: (string | null)[]): string | false {
  const given = reasons.filter((reason): reason is string => reason !== null);
  return given.length > 0 ? given.join('; ') : false;
}

/** An executable called `name` on PATH or in `extraDirs`, or null. */
function findExecutable(name: string, extraDirs: string[] = []): string | null {
  const dirs = [...(process.env['PATH'] ?? '').split(path.delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      /* not here: the next directory */
    }
  }
  return null;
}

/** mapserv and spawn-fcgi, as the OWS server finds them (PATH, or MAPSERV_PATH / SPAWN_FCGI_PATH). */
export function requireMapServer(): string | null {
  if (quickLoop()) return quickLoop();
  if (pretending('mapserver')) return `MapServer is not installed (Debian packages: cgi-mapserver mapserver-bin spawn-fcgi)${PRETENDED}`;
  return locateMapServer() ? null : 'MapServer is not installed (Debian packages: cgi-mapserver mapserver-bin spawn-fcgi)';
}

/** GDAL's command line tools (ogrinfo, ogr2ogr): the OWS tests read the WFS with them, as GIS clients do. */
export function requireGdal(): string | null {
  if (quickLoop()) return quickLoop();
  const reason = 'GDAL is not installed (Debian packages: gdal-bin)';
  if (pretending('gdal')) return `${reason}${PRETENDED}`;
  return findExecutable('ogrinfo') && findExecutable('ogr2ogr') ? null : reason;
}

/** The newest PostgreSQL major version installed here (Debian keeps one directory per version), 15 when none is. */
function localPostgresMajor(): number {
  try {
    const versions = fs.readdirSync('/usr/lib/postgresql').map(Number).filter((major) => Number.isInteger(major) && major > 0);
    if (versions.length > 0) return Math.max(...versions);
  } catch {
    /* no PostgreSQL installed here */
  }
  return 15;
}

/** Whether this machine's PostgreSQL of that major version ships PostGIS (its extension control file). */
const localPostgis = (major: number) => fs.existsSync(`/usr/share/postgresql/${major}/extension/postgis.control`);

const postgisPackage = (major: number) => `(Debian packages: postgresql-${major}-postgis-3)`;

let postgisCheck: Promise<string | null> | null = null;

/**
 * A PostgreSQL server to test on (TEST_DATABASE_URL) that offers PostGIS. Without TEST_DATABASE_URL
 * the reason also names the PostGIS package when this machine's PostgreSQL lacks it, so that one
 * run tells a new machine everything to install. An unreachable TEST_DATABASE_URL is no reason to
 * skip: the promise rejects and the file fails, as every PostgreSQL test would.
 */
export function requirePostgis(): Promise<string | null> {
  postgisCheck ??= (async () => {
    const url = process.env['TEST_DATABASE_URL'];
    if (!url) {
      const major = localPostgresMajor();
      if (pretending('postgis')) return `needs TEST_DATABASE_URL, on a server with PostGIS ${postgisPackage(major)}${PRETENDED}`;
      return localPostgis(major) ? 'needs TEST_DATABASE_URL' : `needs TEST_DATABASE_URL, on a server with PostGIS ${postgisPackage(major)}`;
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ major: number; available: boolean }>(`
        select current_setting('server_version_num')::int / 10000 as major,
               exists (select 1 from pg_available_extensions where name = 'postgis') as available`);
      const { major, available } = rows[0]!;
      const reason = `PostGIS is not installed on the server of TEST_DATABASE_URL ${postgisPackage(major)}`;
      if (pretending('postgis')) return `${reason}${PRETENDED}`;
      return available ? null : reason;
    } finally {
      await client.end();
    }
  })();
  return postgisCheck;
}

/** The mosquitto binary (Debian puts it in /usr/sbin, which is not on every user's PATH), or null. */
export function locateMosquitto(): string | null {
  if (pretending('mosquitto')) return null;
  return findExecutable('mosquitto', ['/usr/sbin', '/usr/local/sbin']);
}

/** The mosquitto binary, for tests that start a broker of their own. */
export function requireMosquittoBinary(): string | null {
  if (quickLoop()) return quickLoop();
  if (locateMosquitto()) return null;
  return `Mosquitto is not installed (Debian packages: mosquitto)${pretending('mosquitto') ? PRETENDED : ''}`;
}

/**
 * An MQTT 3.1.1 CONNECT (clean session, no credentials, keep-alive 10 s) for a probe client, and
 * its DISCONNECT. Written out here because the probe needs nothing else of MQTT.
 */
function connectPacket(clientId: string): Buffer {
  const id = Buffer.from(clientId, 'utf8');
  const variable = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x0a]);
  const payload = Buffer.concat([Buffer.from([id.length >> 8, id.length & 0xff]), id]);
  const remaining = variable.length + payload.length; // < 128: one length byte
  return Buffer.concat([Buffer.from([0x10, remaining]), variable, payload]);
}
const DISCONNECT = Buffer.from([0xe0, 0x00]);

/**
 * What the broker at host:port does with an anonymous MQTT connection: 'accepted', or what went
 * otherwise ('nothing listens', a refusal with its return code, no answer within 5 s, not MQTT).
 */
export function probeMqtt(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      if (outcome === 'accepted') socket.end(DISCONNECT);
      else socket.destroy();
      resolve(outcome);
    };
    // Decided after a poll of the sockets (setImmediate), not in the timer itself: after a stretch
    // that kept the event loop busy (a batch's files loading, say), timers run before the poll
    // phase, and an answer that arrived in time would not have been read yet.
    const timer = setTimeout(() => setImmediate(() => finish(`no MQTT answer within ${BROKER_PROBE_MS} ms`)), BROKER_PROBE_MS);
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code === 'ECONNREFUSED' ? 'nothing listens' : `connection failed (${error.code ?? error.message})`));
    socket.on('connect', () => socket.write(connectPacket(`test-probe-${process.pid}`)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      // CONNACK: type 2, remaining length 2, session-present flags, return code (0 = accepted).
      if (received[0] !== 0x20 || received[1] !== 0x02) finish('it answered something other than MQTT');
      else finish(received[3] === 0 ? 'accepted' : `it refused an anonymous MQTT connection (return code ${received[3]})`);
    });
    socket.on('close', () => finish('it closed the connection without a CONNACK'));
  });
}

let brokerCheck: Promise<string | null> | null = null;

/**
 * A broker accepting anonymous MQTT connections on 127.0.0.1:1883 (MQTT_BROKER), checked with a real
 * CONNECT. Tests that start a broker of their own ask requireMosquittoBinary() instead.
 */
export function requireMosquitto(): Promise<string | null> {
  brokerCheck ??= (async () => {
    if (quickLoop()) return quickLoop();
    const binary = requireMosquittoBinary();
    if (pretending('mosquitto')) return binary;
    const outcome = await probeMqtt(MQTT_BROKER.host, MQTT_BROKER.port);
    if (outcome === 'accepted') return null;
    if (binary) return binary;
    return `no MQTT broker on ${MQTT_BROKER.host}:${MQTT_BROKER.port}: ${outcome} (start one: mosquitto -d -c /etc/mosquitto/mosquitto.conf)`;
  })();
  return brokerCheck;
}

/**
 * curl and jq, which the README's shell examples use: test/docs/first-steps.test.ts runs its first
 * steps with them as a reader would.
 */
export function requireCurlAndJq(): string | null {
  if (quickLoop()) return quickLoop();
  const absent = ['curl', 'jq'].filter((tool) => !findExecutable(tool));
  return absent.length === 0 ? null : `${absent.join(' and ')} not installed (Debian packages: curl jq)`;
}

/** The nginx binary (Debian puts it in /usr/sbin, which is not on every user's PATH), or null. */
export function locateNginx(): string | null {
  return findExecutable('nginx', ['/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin']);
}

/** nginx, for checking the operators' example configuration (deploy/nginx/) with `nginx -t`. */
export function requireNginx(): string | null {
  if (quickLoop()) return quickLoop();
  return locateNginx() ? null : 'nginx is not installed (Debian packages: nginx)';
}

/** openssl's command line tool (Debian: openssl), for a throwaway self-signed certificate. */
export function requireOpenssl(): string | null {
  if (quickLoop()) return quickLoop();
  return findExecutable('openssl') ? null : 'openssl is not installed (Debian packages: openssl)';
}

/** kubectl, whose built-in kustomize renders deploy/kubernetes; any kubectl on the PATH will do. */
export function locateKubectl(): string | null {
  return findExecutable('kubectl');
}

export function requireKubectl(): string | null {
  if (quickLoop()) return quickLoop();
  return locateKubectl() ? null : 'kubectl is not installed (Debian packages: kubernetes-client)';
}

/**
 * What the image test (test/deploy/image.test.ts) builds and runs the container image with: rootful
 * podman (runc as its runtime: see test/deploy/podman.ts), netavark for the build's network, and
 * mmdebstrap for a Debian base image made without a registry.
 */
export function requirePodman(): string | null {
  if (quickLoop()) return quickLoop();
  const tools = ['podman', 'runc', 'netavark', 'mmdebstrap'];
  const absent = tools.filter((tool) => !findExecutable(tool, ['/usr/sbin', '/usr/libexec/podman', '/usr/lib/podman']));
  if (absent.length > 0) return `${absent.join(', ')} not installed (Debian packages: podman runc netavark aardvark-dns iptables uidmap mmdebstrap)`;
  if (process.getuid?.() !== 0) return 'needs root: the image test runs rootful podman and mmdebstrap in root mode';
  return null;
}

/** Debian's Python (its python3-* packages live in its dist-packages, which another python3 on the PATH may not read). */
export const DEBIAN_PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** A Python module of a Debian package (python3-owslib, python3-qgis) that Debian's python3 imports. */
export function requirePythonModule(module: string, debianPackage: string): string | null {
  if (quickLoop()) return quickLoop();
  const reason = `the Python module ${module} is not installed (Debian packages: ${debianPackage})`;
  if (!/^[a-z][a-z0-9_.]*$/i.test(module)) throw new Error(`not a module name: ${module}`);
  const probe = spawnSync(DEBIAN_PYTHON, ['-c', `import ${module}`], { stdio: 'ignore', timeout: 60_000, env: { ...process.env, QT_QPA_PLATFORM: 'offscreen' } });
  return probe.status === 0 ? null : reason;
}
