import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { isForeignKeyViolation, uniquely } from '../../db/constraint-errors.js';
import type { ReadableScope } from '../../access/check-access.js';
import type { Caller } from '../../access/caller.js';
import { loadAssignmentsOfScope, recordCascadingAssignmentDeletes, replaceScopedAssignments, type Assignment } from '../assignments/index.js';
import type { Actor } from '../audit/index.js';
import { DATAPOOL_SORT_COLUMNS, datapoolExists, findDatapoolPage, loadDatapools, lockDatapool } from './datapools.repo.js';
import { lockMissingIds } from '../../db/missing-ids.js';
import { datasetIdsOfDatapools } from '../datasets/index.js';
import type { Datapool, DatapoolInput, DatapoolListQuery, DatapoolPatch } from './datapools.schemas.js';

const duplicateName = (name: string) => `A datapool named "${name}" already exists`;
const unknownContactPerson = () => validationFailed('contactPersonId', 'no user has this id');

/** Datapool representations with the ids of the datasets each holds. */
async function withDatasets(db: Database, ids: string[]): Promise<Datapool[]> {
  const [datapools, datasets] = await Promise.all([loadDatapools(db, ids), datasetIdsOfDatapools(db, ids)]);
  return datapools.map((datapool) => ({ ...datapool, datasets: datasets.get(datapool.id) ?? [] }));
}

export async function getDatapool(db: Database, id: string): Promise<Datapool> {
  const [datapool] = await withDatasets(db, [id]);
  if (!datapool) throw notFound('Datapool', id);
  return datapool;
}

export async function listDatapools(db: Database, query: DatapoolListQuery, readable: ReadableScope) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(DATAPOOL_SORT_COLUMNS)) };
  const { ids, total } = await findDatapoolPage(db, query, request, readable);
  return pageOf(await withDatasets(db, ids), total, request);
}

export async function listDatapoolAssignments(db: Database, id: string): Promise<Assignment[]> {
  if (!(await datapoolExists(db, id))) throw notFound('Datapool', id);
  return loadAssignmentsOfScope(db, 'DATAPOOL', id);
}

async function checkContactPerson(db: Database, contactPersonId: string | null | undefined) {
  if (contactPersonId && (await lockMissingIds(db, 'users', [contactPersonId])).size > 0) throw unknownContactPerson();
}

/**
 * Runs the insert or update of the datapool row: a taken name answers 409, and a contact person
 * deleted between the check and the write answers 400 like the check would.
 */
async function writeRow(name: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await uniquely(write, duplicateName(name), 'name');
  } catch (error) {
    if (isForeignKeyViolation(error)) throw unknownContactPerson();
    throw error;
  }
}

export async function createDatapool(db: Database, caller: Caller, actor: Actor, input: DatapoolInput): Promise<Datapool> {
  const id = randomUUID();
  await db.transaction().execute(async (trx) => {
    await checkContactPerson(trx, input.contactPersonId);
    await writeRow(input.name, () => trx.insertInto('datapools').values({
      id, name: input.name, description: input.description, contact_person_id: input.contactPersonId ?? null,
    }).execute());
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATAPOOL', id, input.assignments);
  });
  return getDatapool(db, id);
}

/**
 * PUT replaces name, description and contact person (an omitted contactPersonId clears it);
 * PATCH changes the given fields. In both, `assignments` replaces the datapool's assignments
 * only when present: they are not part of the representation, so omitting them is not a change.
 */
export async function updateDatapool(
  db: Database, caller: Caller, actor: Actor, id: string, input: DatapoolInput | DatapoolPatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<Datapool> {
  await db.transaction().execute(async (trx) => {
    // The contact user before the datapool row: a user delete locks them in that order too
    // (the user, then the datapools naming them, to clear the contact), so neither can deadlock.
    await checkContactPerson(trx, input.contactPersonId);
    if (!(await lockDatapool(trx, id))) throw notFound('Datapool', id);
    const current = await getDatapool(trx, id);
    assertIfMatch(ifMatch, current);
    const name = input.name ?? current.name;
    const contactPersonId = input.contactPersonId !== undefined ? input.contactPersonId : mode === 'replace' ? null : current.contactPerson?.id ?? null;
    await writeRow(name, () => trx.updateTable('datapools').set({
      name,
      description: input.description ?? current.description,
      contact_person_id: contactPersonId,
      modified_at: sql`now()`,
    }).where('id', '=', id).execute());
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATAPOOL', id, input.assignments);
  });
  return getDatapool(db, id);
}

/**
 * 409 RESOURCE_IN_USE while datasets still live in the datapool. A dataset being created in it
 * holds a lock on the datapool row until it commits, so it cannot slip past this check (and the
 * foreign key refuses the delete in any case).
 */
function assertHoldsNoDatasets(datapool: Datapool): void {
  if (datapool.datasets.length === 0) return;
  throw new AppError('RESOURCE_IN_USE', `Datapool ${datapool.id} still holds datasets (${datapool.datasets.join(', ')}); delete or move them first`);
}

export async function deleteDatapool(db: Database, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!(await lockDatapool(trx, id))) throw notFound('Datapool', id);
    const current = await getDatapool(trx, id);
    assertIfMatch(ifMatch, current);
    assertHoldsNoDatasets(current);
    // Its assignments go with it, in this transaction: their foreign key cascades.
    await recordCascadingAssignmentDeletes(trx, actor, { column: 'scope_id', value: id });
    await trx.deleteFrom('datapools').where('id', '=', id).execute();
  });
}
