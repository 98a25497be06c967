import type { CapturedQuery } from '../sql-alone.js';
import { loopLoad, withStatementClients, type Run } from '../sta/load.js';
import { startCpuMeasurement, type CpuShares, type Parties } from './cpu.js';

/**
 * A scenario's statements alone under the HTTP run's concurrency: `connections` pg clients, each
 * running the captured statements in order, back to back (the closed loop of bench/sta's sqlLoad).
 * The CPU is measured while the clients are still connected: their PostgreSQL backends end with
 * them, and a process that has ended no longer shows its CPU time in /proc.
 */
export async function sqlAlone(databaseUrl: string, queries: CapturedQuery[], connections: number, seconds: number, warmupSeconds: number, parties: Parties): Promise<{ run: Run; cpu: CpuShares }> {
  return withStatementClients(databaseUrl, queries, connections, async (steps) => {
    if (warmupSeconds) await loopLoad(connections, warmupSeconds, steps);
    const stop = startCpuMeasurement(parties);
    const run = await loopLoad(connections, seconds, steps);
    return { run, cpu: await stop() };
  });
}
