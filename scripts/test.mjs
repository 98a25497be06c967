#!/usr/bin/env node
// `npm test`: runs every test/**/*.test.ts (or the files given) with node's test runner through tsx,
// one file at a time (the suites share the machine's PostgreSQL and ports), and says what was skipped
// and why. Node's TAP output is passed through as it comes; its closing lines (`# tests N`, `# pass N`,
// `# fail N`, …) stay the last lines, with `# skipped N` counting skipped suites too (node counts a
// suite skipped as a whole as nothing). The account ends with one line saying what to install (the
// Debian packages that skip reasons name as "(Debian packages: …)", see test/helpers/requirements.ts)
// and whether TEST_DATABASE_URL is wanted. With CI set, any skip fails the run: in CI a skip means a
// dependency is missing, and a suite that did not run proves nothing. Tests left out on purpose
// (--test-name-pattern, --test-only) are counted apart and fail nothing.
//
//   node scripts/test.mjs [--node-test-option=value …] [test/area/*.test.ts …]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
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

const args = process.argv.slice(2);
const nodeOptions = args.filter((arg) => arg.startsWith('--'));
const given = args.filter((arg) => !arg.startsWith('--'));
const files = given.length > 0 ? given : findTests(path.join(root, 'test'));
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}

const skipsFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'test-skips-')), 'skips.jsonl');
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');
const child = spawn(process.execPath, [
  tsxCli, '--test', '--test-concurrency=1',
  '--test-reporter=tap', '--test-reporter-destination=stdout',
  `--test-reporter=${path.join(root, 'scripts', 'test-skips-reporter.mjs')}`, `--test-reporter-destination=${skipsFile}`,
  ...nodeOptions, ...files,
], { cwd: root, stdio: ['inherit', 'pipe', 'inherit'] });
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

const allSkipped = fs.existsSync(skipsFile)
  ? fs.readFileSync(skipsFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line))
  : [];
fs.rmSync(path.dirname(skipsFile), { recursive: true, force: true });
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
  if (inCi) report.push(`CI is set: ${skips.length} skipped means a dependency is missing here, and the run FAILS.`);
  report.push(installLine());
}
for (const line of report) process.stdout.write(`# ${line}\n`);
for (const line of closing) {
  process.stdout.write(`${/^# skipped \d+$/.test(line) ? `# skipped ${allSkipped.length}` : line}\n`);
}

if (signal) process.exit(1);
if (exitCode !== 0) process.exit(exitCode ?? 1);
process.exit(inCi && skips.length > 0 ? 1 : 0);
