import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { withClient } from '../database.js';

/**
 * Who used the machine's CPU during a run, from /proc: the replicas, nginx, PostgreSQL, the
 * benchmark process itself (the load generator), and everything else (other people's work on a
 * shared machine). On 2 cores all of them compete, so this tells whether a run was limited by
 * the replicas, by the database or by the machine being full.
 */

/** Linux counts process CPU time in clock ticks of 1/100 s (USER_HZ) on every common build. */
const TICKS_PER_SECOND = 100;

interface ProcessTicks { comm: string; ppid: number; ticks: number }

function readProcesses(): Map<number, ProcessTicks> {
  const processes = new Map<number, ProcessTicks>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended between the listing and the read
    }
    // The command name sits in parentheses and may hold spaces: the fields follow its last ')'.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    processes.set(Number(entry), { comm, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
  }
  return processes;
}

/** Busy ticks of the whole machine (all cores), from the first line of /proc/stat. */
function machineBusyTicks(): number {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = values.map(Number);
  return user! + nice! + system! + irq! + softirq! + steal!;
}

export interface CpuShares {
  /** CPU used, in cores (1.0 = one core busy for the whole run), per party. */
  replicas: number;
  nginx: number;
  /** The backends serving the benchmark's database. */
  postgres: number;
  /** Every other postgres process: the server's own (WAL writer, checkpointer, …) and other databases' backends. */
  postgresOther: number;
  bench: number;
  others: number;
  /** The machine's busy time, in cores, of `cores` available. */
  busy: number;
  cores: number;
}

export interface Parties {
  /** The replicas' process ids (node processes; their threads count with them). */
  replicaPids: () => number[];
  /** nginx master process ids: each master and its workers count as nginx. */
  nginxMasterPids: () => number[];
  /** The benchmark's database: its backends count as PostgreSQL's work for this benchmark. */
  databaseUrl: string;
}

/** The process ids of the backends connected to the database of `url` now. */
async function backendPids(url: string): Promise<number[]> {
  return withClient(url, async (client) => (await client.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map((row) => row.pid));
}

/**
 * Starts a measurement; the returned function ends it and answers the shares. The benchmark
 * database's backends are read from pg_stat_activity at the end, while they still run.
 */
export function startCpuMeasurement(parties: Parties): () => Promise<CpuShares> {
  const startedAt = performance.now();
  const before = readProcesses();
  const busyBefore = machineBusyTicks();
  return async () => {
    const backends = new Set(await backendPids(parties.databaseUrl));
    const after = readProcesses();
    const seconds = (performance.now() - startedAt) / 1000;
    const replicas = new Set(parties.replicaPids());
    const masters = new Set(parties.nginxMasterPids());
    const shares = { replicas: 0, nginx: 0, postgres: 0, postgresOther: 0, bench: 0, others: 0 };
    for (const [pid, now] of after) {
      // A process that started during the run counts in full; one that ended is lost (PostgreSQL
      // backends of the replicas' pools live long; the few that end are counted in "busy").
      const used = now.ticks - (before.get(pid)?.ticks ?? 0);
      if (used <= 0) continue;
      const party = replicas.has(pid) ? 'replicas'
        : masters.has(pid) || masters.has(now.ppid) ? 'nginx'
          : now.comm === 'postgres' ? (backends.has(pid) ? 'postgres' : 'postgresOther')
            : pid === process.pid ? 'bench'
              : 'others';
      shares[party] += used;
    }
    const inCores = (ticks: number) => ticks / TICKS_PER_SECOND / seconds;
    return {
      replicas: inCores(shares.replicas), nginx: inCores(shares.nginx), postgres: inCores(shares.postgres), postgresOther: inCores(shares.postgresOther),
      bench: inCores(shares.bench), others: inCores(shares.others),
      busy: inCores(machineBusyTicks() - busyBefore), cores: cpus().length,
    };
  };
}
