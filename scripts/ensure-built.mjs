// `npm start` runs the compiled program, which starts sooner than compiling TypeScript on the fly
// (README "Quick start" gives measured start times). This keeps it honest: when any source file is newer than the last build,
// or there is no build, it builds first. Checking costs a few milliseconds of stat calls.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execSync } from 'node:child_process';

const BUILT = 'dist/server.js';

function newestModification(folder) {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestModification(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const sourcesChanged = () =>
  Math.max(newestModification('src'), statSync('package.json').mtimeMs, statSync('tsconfig.json').mtimeMs) > statSync(BUILT).mtimeMs;

if (!existsSync(BUILT) || sourcesChanged()) {
  console.error('Building dist/ from src/ (npm run build)...');
  execSync('npm run --silent build', { stdio: 'inherit' });
}
