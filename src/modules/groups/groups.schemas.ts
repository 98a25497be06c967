import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Ref, Uuid } from '../../http/schemas.js';
import { sharedListParameters, UuidList } from '../../http/page.js';
import { Assignment, GroupRoleAssignmentInput } from '../assignments/assignments.schemas.js';

export const Group = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  contactUser: Type.Union([Ref, Type.Null()]),
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
  contactUserId: Type.Union([Uuid, Type.Null()]),
  memberIds: Type.Array(Uuid, { uniqueItems: true, maxItems: 10_000 }),
};

export const GroupInput = Type.Object({
  name: fields.name,
  description: Type.Optional(fields.description),
  contactUserId: Type.Optional(fields.contactUserId),
  memberIds: Type.Optional(fields.memberIds),
}, { additionalProperties: false, title: 'GroupInput' });
export type GroupInput = Static<typeof GroupInput>;

/** Every field optional; only the given ones change. (Partial drops additionalProperties: given again.) */
export const GroupPatch = Type.Partial(GroupInput, { additionalProperties: false, title: 'GroupPatch' });
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
});
export type GroupListQuery = Static<typeof GroupListQuery>;
