import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, Uuid } from '../../http/schemas.js';
import { sharedListParameters, UuidList } from '../../http/page.js';
import { Assignment, GroupRoleAssignmentInput } from '../assignments/index.js';

export const Group = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  contactUser: Type.Union([Ref, Type.Null()]),
  parentGroup: Type.Union([Ref, Type.Null()], { description: "the parent group: members of a group hold the assignments of every ancestor too" }),
  members: Type.Array(Ref),
  datapools: Type.Array(Ref),
  assignments: Type.Array(Assignment),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Group' });
export type Group = Static<typeof Group>;

const fields = {
  name: NonEmpty(),
  description: Type.String({ maxLength: 4000 }),
  contactUserId: Uuid,
  memberIds: Type.Array(Uuid, { uniqueItems: true, maxItems: 10_000 }),
  parentGroupId: Type.String({ ...Uuid, description: 'the parent group (a tree, as Keycloak subgroups; no cycles)' }),
};

/** Create and PUT: an explicit null for an optional field means "not given" (its default). */
export const GroupInput = Type.Object({
  name: fields.name,
  description: Type.Optional(Nullable(fields.description)),
  contactUserId: Type.Optional(Nullable(fields.contactUserId)),
  memberIds: Type.Optional(Nullable(fields.memberIds)),
  parentGroupId: Type.Optional(Nullable(fields.parentGroupId)),
}, { additionalProperties: false, title: 'GroupInput' });
export type GroupInput = Static<typeof GroupInput>;

/** PATCH: only the given fields change; null clears those that may be empty (all but name). */
export const GroupPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(fields.description)),
  contactUserId: Type.Optional(Nullable(fields.contactUserId)),
  memberIds: Type.Optional(Nullable(fields.memberIds)),
  parentGroupId: Type.Optional(Nullable(fields.parentGroupId)),
}, { additionalProperties: false, title: 'GroupPatch' });
export type GroupPatch = Static<typeof GroupPatch>;

export const GroupAssignmentsInput = Type.Array(GroupRoleAssignmentInput, { maxItems: 1000, title: 'GroupRoleAssignments' });

export const GroupParams = Type.Object({ groupId: Uuid });

export const GroupListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  contactUserId: Type.Optional(Uuid),
  memberIds: Type.Optional(Type.Array(UuidList, { description: 'user ids, comma-separated: groups with any of them as member' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  parentGroupId: Type.Optional(Uuid),
});
export type GroupListQuery = Static<typeof GroupListQuery>;
