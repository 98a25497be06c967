import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withClient } from '../database.js';
import { freePort } from '../../test/faults/harness.js';
import { startNginx, type Nginx } from '../../test/cluster/nginx.js';
import type { Cluster } from '../../test/cluster/harness.js';

/**
 * The data and the front doors of the replica benchmark: a few hundred datasets and a reader of
 * most of them (bulk SQL, as bench/database.ts seeds), a second reader whose only right is given
 * and taken through the API (the revocation probe), and one nginx per replica count.
 */

export const READER_EMAIL = 'replicas.reader@bench.example';
export const REVOCABLE_EMAIL = 'replicas.revocable@bench.example';
export const DATAPOOLS = 5;
export const DATASETS_PER_POOL = 100;
/** The reader holds DATASET_READ on this many of the pools. */
export const READER_POOLS = 4;

export interface Seeded {
  /** The pool the revocation probe is granted on, and a dataset in it the probe reads. */
  revocationPoolId: string;
  revocationDatasetId: string;
  revocableGroupId: string;
  readerRoleId: string;
}

export async function seedDatasets(databaseUrl: string): Promise<Seeded> {
  return withClient(databaseUrl, async (db) => {
    await db.query('begin');
    const pools = await db.query<{ id: string; n: number }>(`
      insert into datapools (id, name, description)
      select gen_random_uuid(), 'Replicas pool ' || n, 'Datapool ' || n || ' of the replica benchmark' from generate_series(1, $1::int) n
      returning id, substring(name from '\\d+$')::int as n`, [DATAPOOLS]);
    const byNumber = new Map(pools.rows.map((row) => [row.n, row.id]));
    await db.query(`
      insert into datasets (id, name, description, datapool_id, status, provisioned, created_at, modified_at)
      select gen_random_uuid(), 'Replicas dataset ' || lpad(p.n::text, 2, '0') || '-' || lpad(k::text, 4, '0'),
             'Readings of station ' || k || ' in pool ' || p.n, p.id, (array['DRAFT', 'READY', 'AVAILABLE'])[1 + k % 3], true,
             now() - (p.n * $2::int + k) * interval '1 second', now() - (p.n * $2::int + k) * interval '1 second'
      from unnest($1::uuid[], $3::int[]) as p(id, n), generate_series(1, $2::int) k`,
    [[...byNumber.values()], DATASETS_PER_POOL, [...byNumber.keys()]]);
    const role = await db.query<{ id: string }>(`
      with role as (
        insert into roles (id, name, description, role_type) values (gen_random_uuid(), 'Replicas dataset reader', 'DATASET_READ', 'DATA') returning id
      ), grant_read as (
        insert into role_permissions (role_id, permission_id) select role.id, p.id from role, permissions p where p.name = 'DATASET_READ'
      ) select id from role`);
    const readerRoleId = role.rows[0]!.id;
    const groupOf = async (email: string, first: string, groupName: string) => (await db.query<{ id: string }>(`
      with person as (
        insert into users (id, email, first_name, last_name, title) values (gen_random_uuid(), $1, $2, 'Reader', 'OTHER') returning id
      ), team as (
        insert into groups (id, name, description) values (gen_random_uuid(), $3, 'replica benchmark') returning id
      ), member as (
        insert into group_members (group_id, user_id) select team.id, person.id from team, person
      ) select id from team`, [email, first, groupName])).rows[0]!.id;
    const readerGroupId = await groupOf(READER_EMAIL, 'Many', 'Replicas readers');
    const revocableGroupId = await groupOf(REVOCABLE_EMAIL, 'Revocable', 'Replicas revocable readers');
    await db.query(`
      insert into assignments (id, group_id, role_id, scope_type, scope_id, datapool_id)
      select gen_random_uuid(), $1, $2, 'DATAPOOL', p, p from unnest($3::uuid[]) p`,
    [readerGroupId, readerRoleId, Array.from({ length: READER_POOLS }, (_, i) => byNumber.get(i + 1)!)]);
    const revocationPoolId = byNumber.get(DATAPOOLS)!;
    const dataset = await db.query<{ id: string }>('select id from datasets where datapool_id = $1 limit 1', [revocationPoolId]);
    await db.query('commit');
    await db.query('analyze');
    return { revocationPoolId, revocationDatasetId: dataset.rows[0]!.id, revocableGroupId, readerRoleId };
  });
}

/** The nginx of the harness balances over every replica; these give the same front over the first n. */
export interface Front { replicas: number; apiUrl: string; dataUrl: string; nginxPid: () => number | null; stop(): Promise<void> }

const pidIn = (dir: string) => () => {
  try {
    return Number(readFileSync(join(dir, 'nginx.pid'), 'utf8').trim()) || null;
  } catch {
    return null;
  }
};

/**
 * Fronts for 1..N replicas: the harness's own nginx for all of them, and one more nginx (the same
 * configuration, src of test/cluster/nginx.ts) for each smaller count, over the first n replicas.
 * All replicas keep running, so every count meets the same processes, caches and data; the
 * replicas outside a front are idle but for their background polling.
 */
export async function startFronts(cluster: Cluster, nginxBinary: string): Promise<Front[]> {
  const fronts: Front[] = [];
  const idpTarget = Number(new URL(cluster.idpUrl).port);
  try {
    for (let n = 1; n < cluster.replicas.length; n++) {
      const dir = mkdtempSync(join(tmpdir(), `bench-replicas-front-${n}-`));
      const ports = { api: await freePort(), data: await freePort(), idp: await freePort(), idpTarget };
      const nginx: Nginx = await startNginx(nginxBinary, dir, ports, cluster.replicas.slice(0, n).map((replica) => replica.ports));
      fronts.push({ replicas: n, apiUrl: nginx.apiUrl, dataUrl: nginx.dataUrl, nginxPid: pidIn(dir), stop: () => nginx.stop() });
    }
  } catch (error) {
    await Promise.all(fronts.map((front) => front.stop()));
    throw error;
  }
  fronts.push({ replicas: cluster.replicas.length, apiUrl: cluster.apiUrl, dataUrl: cluster.dataUrl, nginxPid: pidIn(cluster.dir), stop: async () => {} });
  return fronts;
}
