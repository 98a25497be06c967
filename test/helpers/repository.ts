import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository's root folder, found from this module's location by going up to the folder
 * whose package.json names this project. Not a fixed `../..`: npm test runs the suites as bundles
 * (scripts/test.mjs), where this code sits at another depth than in test/helpers.
 */
function findRepository(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'city-data-platform') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json of city-data-platform above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

export const REPOSITORY = findRepository();
