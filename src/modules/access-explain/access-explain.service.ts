import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { hasPermissionOn } from '../../access/check-access.js';
import { AppError, accessDenied, notFound } from '../../errors.js';
import { findDatasetState } from '../datasets/index.js';
import { grantsOnDataset } from './access-explain.repo.js';
import { findUserActivity } from '../users/index.js';
import type { AccessExplanation, AccessGrant } from './access-explain.schemas.js';

const unknownUser = (userId: string) => new AppError('NOT_FOUND', `userId: no user has the id ${userId}`, {
  fieldErrors: [{ field: 'userId', message: 'no user has this id' }],
});

// Code-point order, so that the answer does not depend on the database's collation.
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Why a user holds what they hold on a dataset. A dataset the caller may not read does not exist
 * for them (404). Explaining someone else's access reads assignments, so it needs ASSIGNMENT_READ
 * covering the dataset; one's own access needs nothing more than reading the dataset.
 */
export async function explainDatasetAccess(db: Database, caller: Caller, datasetId: string, userId: string | undefined): Promise<AccessExplanation> {
  const state = await findDatasetState(db, datasetId);
  const dataset = state && { scopeType: 'DATASET' as const, id: state.id, datapoolId: state.datapoolId };
  if (!dataset || !hasPermissionOn(caller, 'DATASET_READ', dataset)) throw notFound('Dataset', datasetId);
  const own = caller.profile?.userId;
  const subject = userId ?? own;
  if (!subject) throw notFound('Dataset', datasetId); // a caller the service does not know reads nothing
  if (subject !== own && !hasPermissionOn(caller, 'ASSIGNMENT_READ', dataset)) throw accessDenied('ASSIGNMENT_READ');
  const user = await findUserActivity(db, subject);
  if (!user) throw unknownUser(subject);
  const byPermission = new Map<string, AccessGrant[]>();
  for (const row of user.active ? await grantsOnDataset(db, subject, dataset) : []) {
    const grant = {
      assignmentId: row.assignment_id, groupId: row.group_id, groupName: row.group_name, roleId: row.role_id, roleName: row.role_name,
      scopeType: row.scope_type, scopeId: row.scope_id,
    };
    const grants = byPermission.get(row.permission);
    if (grants) grants.push(grant);
    else byPermission.set(row.permission, [grant]);
  }
  return {
    userId: subject,
    datasetId,
    permissions: [...byPermission.entries()].sort(([a], [b]) => compare(a, b)).map(([name, grants]) => ({ name, grants })),
  };
}
