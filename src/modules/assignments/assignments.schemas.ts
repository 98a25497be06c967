import { Type, type Static } from 'typebox';
import { DateTime, Nullable, RoleTypeSchema, ScopeTypeSchema, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';

export const Assignment = Type.Object({
  id: Uuid,
  createdAt: DateTime,
  modifiedAt: DateTime,
  group: Type.Object({ id: Uuid, name: Type.String(), description: Type.String() }),
  role: Type.Object({ id: Uuid, name: Type.String(), description: Type.String(), readonly: Type.Boolean(), roleType: RoleTypeSchema }),
  scope: Type.Object({ id: Uuid, name: Type.String() }),
  scopeType: ScopeTypeSchema,
}, { title: 'Assignment' });
export type Assignment = Static<typeof Assignment>;

export const AssignmentInput = Type.Object({
  groupId: Uuid,
  roleId: Uuid,
  scopeId: Type.Optional(Nullable(Uuid)),
  scopeType: Type.Optional(Nullable(ScopeTypeSchema)),
}, { additionalProperties: false, title: 'AssignmentInput' });
export type AssignmentInput = Static<typeof AssignmentInput>;

/** An assignment inside a dataset or datapool body: the scope is that object itself. */
export const ScopedAssignmentInput = Type.Object({ groupId: Uuid, roleId: Uuid }, { additionalProperties: false, title: 'ScopedAssignmentInput' });
export type ScopedAssignmentInput = Static<typeof ScopedAssignmentInput>;

/** An item of PUT /groups/{groupId}/assignments: the group is the path's. */
export const GroupRoleAssignmentInput = Type.Object({
  roleId: Uuid,
  scopeId: Type.Optional(Nullable(Uuid)),
  scopeType: Type.Optional(Nullable(ScopeTypeSchema)),
}, { additionalProperties: false, title: 'GroupRoleAssignmentInput' });
export type GroupRoleAssignmentInput = Static<typeof GroupRoleAssignmentInput>;

export const AssignmentListQuery = Type.Object({
  ...sharedListParameters,
  roleId: Type.Optional(Uuid),
  userId: Type.Optional(Uuid),
  groupId: Type.Optional(Uuid),
  scopeId: Type.Optional(Uuid),
  scopeType: Type.Optional(ScopeTypeSchema),
  roleType: Type.Optional(RoleTypeSchema),
  q: Type.Optional(Type.String({ description: 'partial match in role name, role description or group name' })),
});
export type AssignmentListQuery = Static<typeof AssignmentListQuery>;
