import { sql, type Kysely } from 'kysely';

/**
 * What running pipelines keep: the records they could not write (kept 7 days or 10,000 per
 * pipeline, pruned by the runtime), the position each reached in a data source (an SQL cursor,
 * committed with the writes it led to), and a restart counter the restart request bumps so that
 * whichever process runs the pipeline starts it again.
 *
 * `runnable_pipelines` says which pipelines should run now: their dataset AVAILABLE with no saga
 * under way (the RELEASE saga ended), and every data source they read AVAILABLE. A view, like
 * `gateway_routes`, so that the runtime asks one question of tables other modules own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table pipelines add column restart_generation integer not null default 0`.execute(db);
  await sql`create table pipeline_rejections (
    id uuid primary key,
    pipeline_id uuid not null references pipelines (id) on delete cascade,
    data_source_id uuid,
    received_at timestamptz not null,
    reason text not null,
    field text,
    record jsonb
  )`.execute(db);
  await sql`create index pipeline_rejections_newest on pipeline_rejections (pipeline_id, received_at desc, id desc)`.execute(db);
  await sql`create table pipeline_positions (
    pipeline_id uuid not null references pipelines (id) on delete cascade,
    data_source_id uuid not null,
    position jsonb not null,
    updated_at timestamptz not null default now(),
    primary key (pipeline_id, data_source_id)
  )`.execute(db);
  await sql`create view runnable_pipelines as
    select p.id, p.dataset_id, p.restart_generation
    from pipelines p join datasets d on d.id = p.dataset_id
    where d.status = 'AVAILABLE' and d.pending_saga_type is null
      and not exists (
        select 1 from unnest(p.data_source_ids) as wanted (id)
        left join data_sources s on s.id = wanted.id
        where s.status is distinct from 'AVAILABLE'
      )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view runnable_pipelines`.execute(db);
  await sql`drop table pipeline_positions`.execute(db);
  await sql`drop table pipeline_rejections`.execute(db);
  await sql`alter table pipelines drop column restart_generation`.execute(db);
}
