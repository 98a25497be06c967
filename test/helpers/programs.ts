import fs from 'node:fs';
import path from 'node:path';
import { REPOSITORY } from './repository.js';

/**
 * How to run one of our TypeScript programs (the service, a test fixture) as a child process:
 * node's arguments for it. npm test bundles these programs once per run (scripts/test.mjs,
 * TEST_PROGRAM_BUNDLES), and a bundle starts in plain node, 2–3 s of CPU sooner than the source
 * through tsx's loader; a file run on its own (npx tsx --test …) gets tsx.
 *
 * `file` is relative to the repository (`src/server.ts`).
 */
export function nodeArgumentsFor(file: string): string[] {
  const bundles = process.env['TEST_PROGRAM_BUNDLES'];
  const bundle = bundles ? path.join(bundles, file.replace(/\.ts$/, '.js')) : null;
  if (bundle && fs.existsSync(bundle)) return ['--enable-source-maps', bundle];
  return ['--import', 'tsx', path.join(REPOSITORY, file)];
}
