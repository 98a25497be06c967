import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, ScopeTypeSchema, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';

export const TitleSchema = Type.Enum(['MR', 'MS', 'OTHER']);

export const User = Type.Object({
  id: Uuid,
  email: Type.String({ format: 'email' }),
  firstName: Type.String(),
  lastName: Type.String(),
  phone: Type.Union([Type.String(), Type.Null()]),
  title: TitleSchema,
  active: Type.Boolean({ description: 'an inactive user is authenticated but holds no permission' }),
  externalId: Type.Union([Type.String(), Type.Null()], { description: "the identity provider's subject id (the token's sub)" }),
  groups: Type.Array(Type.Object({ id: Uuid, name: Type.String(), description: Type.String() }), {
    description: 'the groups the user is a member of, ordered by name',
  }),
  datapools: Type.Array(Ref, { description: "the datapools on which any of the user's groups holds an assignment, ordered by name" }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'User' });
export type User = Static<typeof User>;

const fields = {
  email: Type.String({ format: 'email', maxLength: 255, description: 'unique, case-insensitively; stored lower-cased' }),
  firstName: NonEmpty(),
  lastName: NonEmpty(),
  phone: Type.String({ maxLength: 64 }),
  title: TitleSchema,
  active: Type.Boolean({ description: 'default true; an inactive user holds no permission' }),
  externalId: Type.String({ minLength: 1, maxLength: 255, pattern: '\\S', description: "the identity provider's subject id; unique" }),
  groupIds: Type.Array(Uuid, {
    uniqueItems: true, maxItems: 1000,
    description: 'ids of every group the user is to be a member of (as PUT /users/{id}/groups); left out: memberships unchanged',
  }),
};

/** Create and PUT: an explicit null for an optional field means "not given" (its default; groupIds: unchanged). */
export const UserInput = Type.Object({
  email: fields.email,
  firstName: fields.firstName,
  lastName: fields.lastName,
  phone: Type.Optional(Nullable(fields.phone)),
  title: Type.Optional(Nullable(fields.title)),
  active: Type.Optional(Nullable(fields.active)),
  externalId: Type.Optional(Nullable(fields.externalId)),
  groupIds: Type.Optional(Nullable(fields.groupIds)),
}, { additionalProperties: false, title: 'UserInput' });
export type UserInput = Static<typeof UserInput>;

/** PATCH: only the given fields change; null clears those that may be empty (phone, externalId, groupIds). */
export const UserPatch = Type.Object({
  email: Type.Optional(fields.email),
  firstName: Type.Optional(fields.firstName),
  lastName: Type.Optional(fields.lastName),
  phone: Type.Optional(Nullable(fields.phone)),
  title: Type.Optional(fields.title),
  active: Type.Optional(fields.active),
  externalId: Type.Optional(Nullable(fields.externalId)),
  groupIds: Type.Optional(Nullable(fields.groupIds)),
}, { additionalProperties: false, title: 'UserPatch' });
export type UserPatch = Static<typeof UserPatch>;

export const UserGroupsInput = Type.Array(Uuid, {
  uniqueItems: true, maxItems: 1000, title: 'UserGroupIds', description: "ids of every group the user is to be a member of",
});

export const UserParams = Type.Object({ userId: Uuid });

export const UserListQuery = Type.Object({
  ...sharedListParameters,
  firstName: Type.Optional(Type.String({ description: 'partial match' })),
  lastName: Type.Optional(Type.String({ description: 'partial match' })),
  email: Type.Optional(Type.String({ description: 'exact match, case-insensitive' })),
  q: Type.Optional(Type.String({ description: 'partial match in "firstName lastName" or email' })),
  active: Type.Optional(Type.Boolean({ description: 'exact' })),
  externalId: Type.Optional(Type.String({ description: 'exact' })),
});
export type UserListQuery = Static<typeof UserListQuery>;

export const CurrentUser = Type.Object({
  id: Type.Union([Uuid, Type.Null()], { description: "the caller's user id; null when the token's email is not a user of the service" }),
  username: Type.Union([Type.String(), Type.Null()], { description: 'the token\'s preferred_username, else its email' }),
  email: Type.Union([Type.String(), Type.Null()]),
  firstName: Type.Union([Type.String(), Type.Null()]),
  lastName: Type.Union([Type.String(), Type.Null()]),
  title: TitleSchema,
  assignments: Type.Array(Type.Object({
    scopeType: ScopeTypeSchema,
    scopeId: Uuid,
    permissions: Type.Array(Type.String(), { description: 'permission names, sorted' }),
  }), { description: 'what the caller holds, per scope (X-Allowed-Scope-Ids applied)' }),
}, { title: 'CurrentUser' });
export type CurrentUser = Static<typeof CurrentUser>;
