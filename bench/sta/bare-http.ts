import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../settings.js';
import type { CapturedQuery } from '../sql-alone.js';
import { httpLoad, type Run } from './load.js';

/**
 * The read's statements served by a bare node:http + pg server (bare-http-server.ts, its own
 * process, a pool of `poolSize` as the real server's DATABASE_POOL_SIZE), loaded like the real
 * server: what issue 33 compares the SensorThings reads' p50 and p99 with.
 */
export async function bareHttpLoad(databaseUrl: string, queries: CapturedQuery[], poolSize: number, connections: number, seconds: number, warmupSeconds: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-bare-'));
  const file = join(dir, 'queries.json');
  writeFileSync(file, JSON.stringify(queries));
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'sta', 'bare-http-server.ts')], {
    cwd: REPO_ROOT, env: { ...process.env, BARE_DATABASE_URL: databaseUrl, BARE_QUERIES: file, BARE_POOL_SIZE: String(poolSize) }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [line] = await Promise.race([
      once(child.stdout!, 'data') as Promise<[Buffer]>,
      once(child, 'exit').then(() => { throw new Error('the bare server exited before it listened'); }),
    ]);
    const port = Number(String(line).trim());
    return await httpLoad(`http://127.0.0.1:${port}/`, { connections, seconds, warmupSeconds });
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
