#!/usr/bin/env node
// `npm test`: runs every test/**/*.test.ts (or the files given) with node's test runner, as bundles
// (see bundleTests) packed into shared processes (batchesOf), several processes at once (each file
// makes its own databases, ports, MapServer workers and MQTT listeners, so files do not meet), longest first, and says what was skipped and why. Node's TAP
// output is passed through as it comes; its closing lines (`# tests N`, `# pass N`, `# fail N`, …)
// stay the last lines, with `# skipped N` counting skipped suites too (node counts a suite skipped
// as a whole as nothing). The account ends with one line saying what to install (the Debian packages
// that skip reasons name as "(Debian packages: …)", see test/helpers/requirements.ts) and whether
// TEST_DATABASE_URL is wanted. With CI set, any skip fails the run: in CI a skip means a dependency
// is missing, and a suite that did not run proves nothing. Tests left out on purpose
// (--test-name-pattern, --test-only) are counted apart and fail nothing.
//
//   node scripts/test.mjs [--concurrency=N] [--quick] [--update-durations] [--node-test-option=value …] [test/area/*.test.ts …]
//
// --concurrency=N (or TEST_CONCURRENCY): processes run at once (default: see DEFAULT_PROCESSES_PER_CORE).
// --quick: the inner loop: PGlite only, and no external program (MapServer, GDAL, PostGIS,
//   Mosquitto, nginx, podman, kubectl, Python's GIS clients): the checks of
//   test/helpers/requirements.ts answer "left out of the quick loop", and the files that need such a
//   program throughout are not started at all (QUICK_LEFT_OUT). Skips fail nothing there.
// --update-durations: after the run, stores each file's measured time in test/durations.json, which
//   orders later runs longest first (a long file started last would be the run's tail).
import { spawn } from 'node:child_process';
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const POSTGRES_VARIANTS = 'PostgreSQL variants of ';
/** The reasons node gives to tests that --test-name-pattern or --test-only left out. */
const NOT_SELECTED = new Set(['test name does not match pattern', "'only' option not set"]);
const PACKAGES_NAMED = /\(Debian packages: ([^)]*)\)/g;
/** How test/helpers/requirements.ts's missing() joins the reasons of a suite that lacks several things. */
const REASONS_JOINED = '; ';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const inCi = ['true', '1', 'yes'].includes(String(process.env.CI ?? '').toLowerCase());

/** test/**\/*.test.ts below `dir`, relative to the project root, sorted (files added by anyone are picked up). */
function findTests(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findTests(full));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) found.push(path.relative(root, full));
  }
  return found.sort();
}

/**
 * Files the quick loop does not start: every test in them needs PostgreSQL or an external program,
 * so they would only start a process to skip. A file missing here costs the quick loop a few seconds,
 * never a test (its checks skip what it cannot run).
 */
const QUICK_LEFT_OUT = [
  'test/data-api/cache-control.test.ts', 'test/data-api/mqtt-cluster.test.ts', 'test/data-api/mqtt-redis-cluster.test.ts', 'test/data-api/route-propagation.test.ts',
  'test/db/postgis-start.test.ts', 'test/db/prepared-statements.test.ts',
  'test/deploy/image.test.ts', 'test/deploy/kubernetes.test.ts', 'test/deploy/nginx-example.test.ts', 'test/docs/first-steps.test.ts',
  'test/faults/database-faults.test.ts', 'test/faults/idempotency-after-kill.test.ts', 'test/faults/start-up.test.ts',
  'test/ingest/sql-connector.test.ts', 'test/ingest/mqtt-connector.test.ts',
  'test/ows/gdal-clients.test.ts', 'test/ows/gis-clients.test.ts', 'test/ows/mapserver-fair-queue.test.ts', 'test/ows/mapserver-no-network.test.ts',
  'test/ows/mapserver-pool.test.ts', 'test/ows/ows-access.test.ts', 'test/ows/ows-canary.test.ts', 'test/ows/ows-fair-share.test.ts',
  'test/ows/qgis-wms.test.ts', 'test/ows/wfs-wms.test.ts',
  'test/pipelines/feature-pipeline.test.ts', 'test/pipelines/sql-pipeline.test.ts', 'test/pipelines/takeover.test.ts',
];

const DURATIONS_PATH = path.join(root, 'test', 'durations.json');

/** Seconds per file as last stored (test/durations.json), {} when there is none. */
function storedDurations() {
  try {
    return JSON.parse(fs.readFileSync(DURATIONS_PATH, 'utf8'));
  } catch {
    return {};
  }
}

/**
 * The files, longest first by their stored time, so that no long file starts last and becomes the
 * run's tail. A file without a stored time (a new one) counts as the longest: it may be.
 */
function longestFirst(list) {
  const seconds = storedDurations();
  const known = (file) => seconds[file] ?? Number.POSITIVE_INFINITY;
  return [...list].sort((a, b) => known(b) - known(a) || a.localeCompare(b));
}

/**
 * Test files share processes. A process spends about a second loading the application and runs its
 * code cold until the JIT has warmed it, which a file alone repeats for every file: ten files of the
 * management API took 57 CPU-s in a process each and 29 in one (docs/tests.md, "How long"). So the
 * files, longest first, are packed into batches of at most BATCH_SECONDS of stored time each (first
 * fit); a longer file, or one without a stored time, runs alone. A batch's files run one after the
 * other, each as in a process of its own: they share only what helpers keep per process (the test
 * identity provider, the block of test ports, the PGlite snapshot). BATCH_SECONDS keeps a run's tail
 * short: the last batch to start is at most that long.
 */
const BATCH_SECONDS = 60;
function batchesOf(list, seconds) {
  const batches = [];
  for (const file of list) {
    const own = seconds[file] ?? Number.POSITIVE_INFINITY;
    const fits = own < BATCH_SECONDS && batches.find((batch) => batch.seconds + own <= BATCH_SECONDS);
    if (fits) {
      fits.files.push(file);
      fits.seconds += own;
    } else {
      batches.push({ files: [file], seconds: own });
    }
  }
  return batches.sort((a, b) => b.seconds - a.seconds).map((batch) => batch.files);
}

/** Writes the measured seconds of every file of this run into test/durations.json, keeping the others. */
function storeDurations(measured) {
  const seconds = storedDurations();
  for (const { file, ms } of measured) seconds[path.relative(root, file)] = Math.round(ms / 100) / 10;
  const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
  fs.writeFileSync(DURATIONS_PATH, `${JSON.stringify(sorted, null, 2)}\n`);
}

/** The three files that took longest in this run, for the closing account. */
const slowest = (measured) => [...measured].sort((a, b) => b.ms - a.ms).slice(0, 3)
  .map(({ file, ms }) => `${path.relative(root, file)} ${(ms / 1000).toFixed(0)} s`).join(', ') || 'none measured';

/**
 * Processes run at once: one and a half per core (3 on 2). Measured on 2 cores (docs/tests.md, "How
 * long"): once files share processes (batchesOf) the run no longer keeps both cores busy (1.45
 * busy at two processes: child servers starting, waits in the fault tests, the image test's
 * downloads), and a third process fills those gaps: 423 s against 475 s, the same tree.
 * TEST_CONCURRENCY or --concurrency overrides it.
 */
const DEFAULT_PROCESSES_PER_CORE = 1.5;
function concurrencyOf(setting) {
  if (setting === undefined || setting === '') return Math.max(1, Math.round(os.availableParallelism() * DEFAULT_PROCESSES_PER_CORE));
  const n = Number(setting);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`the concurrency must be a whole number of at least 1, not ${setting}`);
    process.exit(2);
  }
  return n;
}

/**
 * The test files as bundles (esbuild, code shared between them in chunks, packages left to
 * node_modules), under .test-build/run-<pid>/ in the same layout as test/. Node then loads plain
 * JavaScript: through tsx's loader hooks every test process spent 2–3 s of CPU more on loading the
 * application (measured on the suite's files: about 6 CPU-minutes a run on 2 cores). Source maps
 * keep stack traces and test locations on the TypeScript lines.
 */
const BUNDLE_OPTIONS = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: `node${process.versions.node.split('.')[0]}`,
  packages: 'external',
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
};

/** What tests start as child processes (through test/helpers/programs.ts); one missing here runs through tsx. */
const CHILD_PROGRAMS = ['src/server.ts', 'test/datasets/fixtures/crashing-dataset-saga.ts', 'test/jobs/fixtures/crashing-saga.ts', 'test/pipelines/pipeline-process.ts'];

async function bundleTests(sources) {
  const base = path.join(root, '.test-build');
  // Bundles of runs that ended without cleaning up (a killed run) go first.
  for (const entry of fs.existsSync(base) ? fs.readdirSync(base) : []) {
    const pid = Number(/^run-(\d+)$/.exec(entry)?.[1]);
    if (pid && !isAlive(pid)) fs.rmSync(path.join(base, entry), { recursive: true, force: true });
  }
  const dir = path.join(base, `run-${process.pid}`);
  await esbuild.build({ ...BUNDLE_OPTIONS, entryPoints: sources.map((file) => path.join(root, file)), outbase: path.join(root, 'test'), outdir: dir });
  // The programs tests start as child processes, in the repository's layout (test/helpers/programs.ts finds them).
  await esbuild.build({ ...BUNDLE_OPTIONS, entryPoints: CHILD_PROGRAMS.map((file) => path.join(root, file)), outbase: root, outdir: path.join(dir, 'programs') });
  const bundleOf = (file) => path.join(dir, path.relative(path.join(root, 'test'), path.join(root, file))).replace(/\.ts$/, '.js');
  // A batch of several files is one entry importing their bundles in turn (see batchesOf).
  fs.mkdirSync(path.join(dir, 'batches'));
  const entryOf = (batch, index) => {
    if (batch.length === 1) return bundleOf(batch[0]);
    const entry = path.join(dir, 'batches', `batch-${String(index + 1).padStart(3, '0')}.mjs`);
    fs.writeFileSync(entry, batch.map((file) => `import ${JSON.stringify(`./${path.relative(path.dirname(entry), bundleOf(file))}`)};\n`).join(''));
    return entry;
  };
  return {
    entries: batchesOf(sources, storedDurations()).map(entryOf),
    programs: path.join(dir, 'programs'),
    /** The test file a bundle was made from (for the account of skips and times). */
    sourceOf: (file) => (file.startsWith(dir) ? path.join(root, 'test', path.relative(dir, file)).replace(/\.js$/, '.ts') : file),
    /** databaseKinds()' stand-in test names its file by its bundle's path, relative to the root. */
    namedSource: (name) => name.replace(new RegExp(`${escapeRegExp(path.relative(root, dir))}/(\\S*?)\\.js`, 'g'), 'test/$1.ts'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const args = process.argv.slice(2);
const ownOption = (name) => args.find((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
const quick = ownOption('quick') !== undefined;
const updateDurations = ownOption('update-durations') !== undefined;
const concurrency = concurrencyOf(ownOption('concurrency')?.split('=')[1] ?? process.env['TEST_CONCURRENCY']);
const OWN_OPTIONS = ['--quick', '--update-durations', '--concurrency'];
const nodeOptions = args.filter((arg) => arg.startsWith('--') && !OWN_OPTIONS.some((own) => arg === own || arg.startsWith(`${own}=`)));
const given = args.filter((arg) => !arg.startsWith('--'));
const found = given.length > 0 ? given : findTests(path.join(root, 'test'));
const files = longestFirst(quick ? found.filter((file) => !QUICK_LEFT_OUT.some((left) => file === left || file.startsWith(left))) : found);
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}

const accountDir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-account-'));
const skipsFile = path.join(accountDir, 'skips.jsonl');
const durationsFile = path.join(accountDir, 'durations.jsonl');
const childEnv = { ...process.env };
if (quick) {
  childEnv['TEST_QUICK'] = '1';
  delete childEnv['TEST_DATABASE_URL'];
}
const bundles = await bundleTests(files);
childEnv['TEST_PROGRAM_BUNDLES'] = bundles.programs;
// A test (a suite counts as one) that has not finished in 10 minutes fails naming itself: a hang
// (a promise nothing will settle, seen once when another run dropped the server's template) would
// otherwise hold CI to its limit and say nothing. The slowest test takes about 2.5 minutes.
const TEST_TIMEOUT_MS = 600_000;
const child = spawn(process.execPath, [
  '--enable-source-maps', '--test', `--test-concurrency=${Math.min(concurrency, bundles.entries.length)}`, `--test-timeout=${TEST_TIMEOUT_MS}`,
  '--test-reporter=tap', '--test-reporter-destination=stdout',
  `--test-reporter=${path.join(root, 'scripts', 'test-skips-reporter.mjs')}`, `--test-reporter-destination=${skipsFile}`,
  `--test-reporter=${path.join(root, 'scripts', 'test-durations-reporter.mjs')}`, `--test-reporter-destination=${durationsFile}`,
  ...nodeOptions, ...bundles.entries,
], { cwd: root, env: childEnv, stdio: ['inherit', 'pipe', 'inherit'] });
// Ctrl-C reaches the child too (same process group); this process waits for it to finish its report.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));

// Everything up to node's closing block goes out as it comes; the block is held back so that the
// account of the skips comes before it and the block stays last.
const closing = [];
const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (closing.length > 0 || /^# tests \d+$/.test(line)) closing.push(line);
  else process.stdout.write(`${line}\n`);
});
const [exitCode, signal] = await new Promise((resolve) => child.on('close', (code, sig) => resolve([code, sig])));
bundles.remove();

const jsonLines = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : []);
const allSkipped = jsonLines(skipsFile).map((skip) => ({ ...skip, file: skip.file && bundles.sourceOf(skip.file), name: bundles.namedSource(skip.name) }));
// Top-level tests declared by a helper (databaseKinds' stand-in) are no file's own.
const measured = jsonLines(durationsFile).map((entry) => ({ ...entry, file: bundles.sourceOf(entry.file) })).filter((entry) => entry.file.endsWith('.test.ts'));
fs.rmSync(accountDir, { recursive: true, force: true });
if (updateDurations) storeDurations(measured);
const unselected = allSkipped.filter((skip) => NOT_SELECTED.has(skip.reason));
const skips = allSkipped.filter((skip) => !NOT_SELECTED.has(skip.reason));

/** The one closing line: the Debian packages the skip reasons name (each once, in order met), and TEST_DATABASE_URL if wanted. */
function installLine() {
  const packages = new Set();
  for (const skip of skips) {
    for (const [, named] of (skip.reason ?? '').matchAll(PACKAGES_NAMED)) for (const name of named.split(/\s+/).filter(Boolean)) packages.add(name);
  }
  const steps = [];
  if (packages.size > 0) steps.push(`apt-get install ${[...packages].join(' ')}`);
  if (skips.some((skip) => (skip.reason ?? '').includes('needs TEST_DATABASE_URL'))) {
    steps.push('set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres (any database of a server you may create databases on) for the PostgreSQL variants');
  }
  return steps.length > 0 ? `To run them: ${steps.join('; then ')}.` : 'To run them: see the reasons above.';
}

const report = [];
if (unselected.length > 0) report.push(`Not selected by --test-name-pattern or --test-only: ${unselected.length} (node counts them as skipped; they lack nothing).`);
if (skips.length > 0) {
  const suites = skips.filter((skip) => skip.suite).length;
  const severalReasons = skips.some((skip) => (skip.reason ?? '').includes(REASONS_JOINED));
  report.push(`Skipped: ${skips.length} (${skips.length - suites} tests, ${suites} whole suites), by reason${severalReasons ? ' (one that lacks several things is under each)' : ''}:`);
  const byReason = new Map();
  for (const skip of skips) {
    for (const reason of (skip.reason || '(no reason given)').split(REASONS_JOINED)) {
      if (!byReason.has(reason)) byReason.set(reason, new Map());
      const byFile = byReason.get(reason);
      const file = skip.file ? path.relative(root, skip.file) : '(unknown file)';
      byFile.set(file, [...(byFile.get(file) ?? []), skip.name]);
    }
  }
  for (const [reason, byFile] of byReason) {
    const count = [...byFile.values()].reduce((sum, names) => sum + names.length, 0);
    report.push(`  ${reason}: ${count}`);
    for (const [file, names] of byFile) {
      // test/helpers/test-app.ts's databaseKinds() stands one skipped test in for a file's PostgreSQL
      // variants, named after that file (node names the helper as the place of declaration).
      const variants = names.filter((name) => name.startsWith(POSTGRES_VARIANTS));
      const others = names.filter((name) => !name.startsWith(POSTGRES_VARIANTS));
      if (others.length > 0) report.push(`    ${file}: ${others.join(' | ')}`);
      if (variants.length > 0) {
        report.push(`    the PostgreSQL variants of ${variants.length} file${variants.length === 1 ? '' : 's'}: ${variants.map((name) => name.slice(POSTGRES_VARIANTS.length)).join(', ')}`);
      }
    }
  }
  if (quick) report.push('The quick loop skips what needs PostgreSQL or an external program: npm test runs everything.');
  else if (inCi) report.push(`CI is set: ${skips.length} skipped means a dependency is missing here, and the run FAILS.`);
  report.push(installLine());
}
report.push(`Files: ${files.length} in ${bundles.entries.length} processes, ${Math.min(concurrency, bundles.entries.length)} at a time${quick ? ' (the quick loop)' : ''}; the slowest: ${slowest(measured)}.`);
for (const line of report) process.stdout.write(`# ${line}\n`);
for (const line of closing) {
  process.stdout.write(`${/^# skipped \d+$/.test(line) ? `# skipped ${allSkipped.length}` : line}\n`);
}

if (signal) process.exit(1);
if (exitCode !== 0) process.exit(exitCode ?? 1);
process.exit(inCi && !quick && skips.length > 0 ? 1 : 0);
