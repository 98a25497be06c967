import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import pg from 'pg';

/**
 * Which replica holds a pipeline's lease. The lease is a session advisory lock (src/ingest/leases.ts,
 * class 'PIPE'); PostgreSQL tells which backend holds it and that backend's client port; the
 * replica whose process owns a socket on that local port is the holder (Linux: /proc/net/tcp maps
 * the port to a socket inode, /proc/<pid>/fd to the process).
 */

const PIPELINE_LOCK_CLASS = 0x50495045;

/** The client ports (on the replicas' side) of the sessions holding pipeline leases in `database`. */
async function leaseClientPorts(db: pg.Pool, database: string): Promise<number[]> {
  const { rows } = await db.query<{ client_port: number }>(`
    select a.client_port from pg_locks l join pg_stat_activity a on a.pid = l.pid
     where l.locktype = 'advisory' and l.granted and l.classid = $1::bigint::oid and a.datname = $2`, [PIPELINE_LOCK_CLASS, database]);
  return rows.map((row) => row.client_port);
}

/** Socket inodes of the TCP connections whose local port is `port` (IPv4 and IPv6 tables). */
function inodesOfLocalPort(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(table, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const localPort = parseInt(fields[1]!.split(':')[1]!, 16);
      if (localPort === port) inodes.add(fields[9]!);
    }
  }
  return inodes;
}

function ownsSocket(pid: number, inodes: Set<string>): boolean {
  let fds: string[];
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  for (const fd of fds) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match && inodes.has(match[1]!)) return true;
    } catch { /* closed meanwhile */ }
  }
  return false;
}

/**
 * The pid among `pids` that holds a pipeline lease in the database, or null when none does. `db`:
 * a pool the caller keeps (polling with a connection each time would compete with the replicas
 * for the server's connections).
 */
export async function pipelineLeaseHolder(db: pg.Pool, database: string, pids: number[]): Promise<number | null> {
  for (const port of await leaseClientPorts(db, database)) {
    const inodes = inodesOfLocalPort(port);
    const holder = pids.find((pid) => ownsSocket(pid, inodes));
    if (holder !== undefined) return holder;
  }
  return null;
}
