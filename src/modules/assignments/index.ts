/**
 * The assignments module's public face. Every module whose objects are scopes of assignments
 * (datapools, datasets, data sources, data structures) or hold them (groups, users) goes through
 * these, never through the repo or the service files.
 */
export { assignmentRoutes } from './assignments.routes.js';
export { Assignment, GroupRoleAssignmentInput, ScopedAssignmentInput } from './assignments.schemas.js';
export { loadAssignments, loadAssignmentsOfScope } from './assignments.repo.js';
export { recordCascadingAssignmentDeletes, replaceGroupAssignments, replaceScopedAssignments } from './assignments.service.js';
export { assertTenantAdministratorRemains, keepingATenantAdministrator, lockTenantAdministratorGuard } from './tenant-administrator-guard.js';
