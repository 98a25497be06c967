import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Creates a new PGlite data directory in a short-lived child process. Creating the cluster
 * (initdb inside WebAssembly) grows the WASM heap to about 700 MB, and a WASM heap never shrinks:
 * done in this process, that memory would stay resident for the whole life of the service.
 * Opening an existing directory afterwards needs about a third of it.
 */
export function initialisePgliteDirectory(dataDir: string, settings: string[]): void {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return;
  const pgliteUrl = import.meta.resolve('@electric-sql/pglite');
  const script = `
    const { PGlite } = await import(${JSON.stringify(pgliteUrl)});
    const db = new PGlite(${JSON.stringify(dataDir)}, { postgresqlconf: ${JSON.stringify(settings)} });
    await db.waitReady;
    await db.close();
  `;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
}
