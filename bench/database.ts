import { withClient } from '../test/helpers/database-beside.js';

/** A fresh database on the benchmark's PostgreSQL server, dropped by `drop()`. */
export { createDatabaseBeside as createDatabase, withClient } from '../test/helpers/database-beside.js';

export const SEED = {
  users: 10_000,
  groups: 2_000,
  membershipsPerUser: 5,
  dataRoles: 50,
  datapools: 1_000,
  assignmentsPerGroup: 10,
  /** Every 20th group's name holds this word, so `q=harbour` matches 100 of 2,000 groups. */
  groupWord: 'harbour',
  /** How many bench groups the bootstrap administrator joins besides Administrators. */
  adminGroups: 5,
  /** Datasets, spread evenly over the first `datasetDatapools` datapools; every 20th is about the harbour. */
  datasets: 100_000,
  datasetDatapools: 100,
  /** The dataset reader holds DATASET_READ on this many of those datapools. */
  readerDatapools: 10,
  readerEmail: 'dataset.reader@bench.example',
} as const;

const WORDS = ['harbour', 'meadow', 'station', 'bridge', 'market', 'river', 'tower', 'garden', 'school', 'forest',
  'castle', 'valley', 'airport', 'library', 'stadium', 'museum', 'quarry', 'harvest', 'beacon', 'canal'];

export interface SeedResult {
  counts: Record<string, number>;
  /** A bench group with `assignmentsPerGroup` assignments, for the assignment list scenario. */
  sampleGroupId: string;
  seconds: number;
}

/**
 * Fills the tables with set-based SQL (generate_series): users, groups with
 * members and a contact, DATA roles with permissions, datapools, DATAPOOL assignments that
 * are unique per (group, role, scope), datasets, and a reader of some datapools' datasets. The server must have migrated and bootstrapped first.
 */
export async function seed(url: string, adminEmail: string): Promise<SeedResult> {
  const startedAt = performance.now();
  return withClient(url, async (db) => {
    const s = SEED;
    const words = `array[${WORDS.map((word) => `'${word}'`).join(', ')}]`;
    await db.query('begin');
    await db.query(`
      insert into users (id, email, first_name, last_name, phone, title, created_at, modified_at)
      select gen_random_uuid(), 'user' || n || '@bench.example', 'First' || n, 'Last' || n, '+49 30 ' || (1000000 + n),
             (array['MR', 'MS', 'OTHER'])[1 + n % 3], now() - n * interval '1 minute', now() - n * interval '1 minute'
      from generate_series(1, ${s.users}) n`);
    await db.query(`create temp table bench_user on commit drop as
      select id, row_number() over (order by email) as n from users where email like '%@bench.example'`);

    await db.query(`
      insert into groups (id, name, description, contact_user_id, created_at, modified_at)
      select gen_random_uuid(),
             'Bench group ' || lpad(g.n::text, 4, '0') || ' ' || initcap((${words})[1 + g.n % ${WORDS.length}]),
             'Team ' || (${words})[1 + (g.n * 7) % ${WORDS.length}] || ' of district ' || (g.n % 50),
             u.id, now() - g.n * interval '5 minutes', now() - g.n * interval '5 minutes'
      from generate_series(1, ${s.groups}) as g(n)
      join bench_user u on u.n = 1 + (g.n * 3) % ${s.users}`);
    await db.query(`create temp table bench_group on commit drop as
      select id, row_number() over (order by name) as n from groups where name like 'Bench group %'`);

    // Member k of user n: distinct groups for k = 0..4, spread over all groups.
    await db.query(`
      insert into group_members (group_id, user_id)
      select g.id, u.id
      from bench_user u cross join generate_series(0, ${s.membershipsPerUser - 1}) k
      join bench_group g on g.n = 1 + (u.n * 7 + k * 401) % ${s.groups}
      on conflict do nothing`);

    await db.query(`
      insert into roles (id, name, description, role_type, readonly, created_at, modified_at)
      select gen_random_uuid(), 'Bench role ' || lpad(n::text, 2, '0'), 'Benchmark DATA role ' || n, 'DATA', false,
             now() - n * interval '1 hour', now() - n * interval '1 hour'
      from generate_series(1, ${s.dataRoles}) n`);
    await db.query(`create temp table bench_role on commit drop as
      select id, row_number() over (order by name) as n from roles where name like 'Bench role %'`);
    // Three DATA permissions per role, rotating through the catalogue.
    await db.query(`
      with data_permission as (select id, row_number() over (order by name) - 1 as i, count(*) over () as total from permissions where permission_type = 'DATA')
      insert into role_permissions (role_id, permission_id)
      select r.id, p.id from bench_role r cross join generate_series(0, 2) k
      join data_permission p on p.i = (r.n + k * 4) % p.total
      on conflict do nothing`);

    await db.query(`
      insert into datapools (id, name, description, contact_person_id, created_at, modified_at)
      select gen_random_uuid(), 'Bench datapool ' || lpad(n::text, 4, '0'), 'Datapool ' || n || ' of the benchmark', null,
             now() - n * interval '2 minutes', now() - n * interval '2 minutes'
      from generate_series(1, ${s.datapools}) n`);
    await db.query(`create temp table bench_datapool on commit drop as
      select id, row_number() over (order by name) as n from datapools where name like 'Bench datapool %'`);

    // Assignment k of group g: role 1 + (10g + k) mod 50 differs for every k < 50, so
    // (group, role, scope) is unique whatever the datapool.
    await db.query(`
      insert into assignments (id, group_id, role_id, scope_type, scope_id, datapool_id, created_at, modified_at)
      select gen_random_uuid(), g.id, r.id, 'DATAPOOL', d.id, d.id, now() - (g.n * 10 + k) * interval '1 second', now() - (g.n * 10 + k) * interval '1 second'
      from bench_group g cross join generate_series(0, ${s.assignmentsPerGroup - 1}) k
      join bench_role r on r.n = 1 + (g.n * ${s.assignmentsPerGroup} + k) % ${s.dataRoles}
      join bench_datapool d on d.n = 1 + (g.n * 13 + k * 97) % ${s.datapools}`);

    // The administrator is a member of some ordinary groups too, as real administrators are.
    await db.query(`
      insert into group_members (group_id, user_id)
      select g.id, u.id from bench_group g, users u
      where g.n <= ${s.adminGroups} and lower(u.email) = lower($1)
      on conflict do nothing`, [adminEmail]);

    // Datasets: provisioned rows (their storage schemas are not needed to list them).
    await db.query(`
      insert into datasets (id, name, description, datapool_id, status, provisioned, created_at, modified_at)
      select gen_random_uuid(),
             'Dataset ' || lpad(g.n::text, 6, '0') || ' ' || initcap((${words})[1 + g.n % ${WORDS.length}]),
             'Readings of the ' || (${words})[1 + (g.n * 3) % ${WORDS.length}] || ' sensors, series ' || g.n,
             d.id, (array['DRAFT', 'READY', 'AVAILABLE'])[1 + g.n % 3], true,
             now() - g.n * interval '1 second', now() - g.n * interval '1 second'
      from generate_series(1, ${s.datasets}) as g(n)
      join bench_datapool d on d.n = 1 + g.n % ${s.datasetDatapools}`);
    // The dataset reader: DATASET_READ on the first few of those datapools, nothing else.
    await db.query(`
      with reader as (
        insert into users (id, email, first_name, last_name, title) values (gen_random_uuid(), $1, 'Dataset', 'Reader', 'OTHER') returning id
      ), team as (
        insert into groups (id, name, description) values (gen_random_uuid(), 'Bench dataset readers', 'Reads some datapools') returning id
      ), member as (
        insert into group_members (group_id, user_id) select team.id, reader.id from team, reader
      ), role as (
        insert into roles (id, name, description, role_type) values (gen_random_uuid(), 'Bench dataset reader', 'DATASET_READ', 'DATA') returning id
      ), grant_read as (
        insert into role_permissions (role_id, permission_id) select role.id, p.id from role, permissions p where p.name = 'DATASET_READ'
      )
      insert into assignments (id, group_id, role_id, scope_type, scope_id, datapool_id)
      select gen_random_uuid(), team.id, role.id, 'DATAPOOL', d.id, d.id
      from team, role, bench_datapool d where d.n <= ${s.readerDatapools}`, [s.readerEmail]);

    const sample = await db.query<{ id: string }>(`select id from bench_group where n = ${Math.floor(s.groups / 2)}`);
    await db.query('commit');
    await db.query('analyze');

    const counts: Record<string, number> = {};
    for (const table of ['users', 'groups', 'group_members', 'roles', 'role_permissions', 'datapools', 'assignments', 'datasets']) {
      const { rows } = await db.query<{ count: string }>(`select count(*) as count from ${table}`);
      counts[table] = Number(rows[0]!.count);
    }
    return { counts, sampleGroupId: sample.rows[0]!.id, seconds: (performance.now() - startedAt) / 1000 };
  });
}
