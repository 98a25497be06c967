import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Ref, ScopeTypeSchema, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';

export const TitleSchema = Type.Enum(['MR', 'MS', 'OTHER']);

export const User = Type.Object({
  id: Uuid,
  email: Type.String({ format: 'email' }),
  firstName: Type.String(),
  lastName: Type.String(),
  phone: Type.Union([Type.String(), Type.Null()]),
  title: TitleSchema,
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
  phone: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
  title: TitleSchema,
};

export const UserInput = Type.Object({
  email: fields.email,
  firstName: fields.firstName,
  lastName: fields.lastName,
  phone: Type.Optional(fields.phone),
  title: Type.Optional(fields.title),
}, { additionalProperties: false, title: 'UserInput' });
export type UserInput = Static<typeof UserInput>;

/** Every field optional; only the given ones change. (Partial drops additionalProperties: given again.) */
export const UserPatch = Type.Partial(UserInput, { additionalProperties: false, title: 'UserPatch' });
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
