import { Type, type Static } from 'typebox';
import { ScopeTypeSchema, Uuid } from '../../http/schemas.js';

export const AccessGrant = Type.Object({
  assignmentId: Uuid,
  groupId: Uuid,
  groupName: Type.String({ description: 'the group holding the assignment: one of the user\'s groups or an ancestor of one' }),
  roleId: Uuid,
  roleName: Type.String(),
  scopeType: ScopeTypeSchema,
  scopeId: Uuid,
}, { title: 'AccessGrant' });

export const AccessExplanation = Type.Object({
  userId: Uuid,
  datasetId: Uuid,
  permissions: Type.Array(Type.Object({
    name: Type.String(),
    grants: Type.Array(AccessGrant, { description: 'every assignment that grants this permission on the dataset' }),
  }), { description: 'every permission the user holds on the dataset, sorted by name; empty for an inactive user' }),
}, { title: 'AccessExplanation' });
export type AccessExplanation = Static<typeof AccessExplanation>;
export type AccessGrant = Static<typeof AccessGrant>;

export const AccessExplanationQuery = Type.Object({
  userId: Type.Optional(Uuid),
});
