import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, RoleTypeSchema, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';
import { PermissionTypeSchema } from '../permissions/index.js';

export const Role = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  roleType: RoleTypeSchema,
  readonly: Type.Boolean(),
  permissions: Type.Array(Type.Object({ id: Uuid, name: Type.String(), permissionType: PermissionTypeSchema })),
  datapools: Type.Array(Ref),
  groupCount: Type.Integer(),
  userCount: Type.Integer(),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Role' });
export type Role = Static<typeof Role>;

const roleFields = {
  name: NonEmpty(),
  description: Type.String({ maxLength: 4000 }),
  permissionIds: Type.Array(Uuid, { uniqueItems: true, maxItems: 1000 }),
  readonly: Type.Boolean({ default: false }),
  roleType: RoleTypeSchema,
};

/** Create and PUT: an explicit null for an optional field means "not given" (its default). */
export const RoleInput = Type.Object({
  name: roleFields.name,
  description: Type.Optional(Nullable(roleFields.description)),
  permissionIds: Type.Optional(Nullable(roleFields.permissionIds)),
  readonly: Type.Optional(Nullable(roleFields.readonly)),
  roleType: roleFields.roleType,
}, { additionalProperties: false, title: 'RoleInput' });
export type RoleInput = Static<typeof RoleInput>;

/** PATCH: only the given fields change; null clears description and permissionIds. */
export const RolePatch = Type.Object({
  name: Type.Optional(roleFields.name),
  description: Type.Optional(Nullable(roleFields.description)),
  permissionIds: Type.Optional(Nullable(roleFields.permissionIds)),
  readonly: Type.Optional(Type.Boolean()),
  roleType: Type.Optional(roleFields.roleType),
}, { additionalProperties: false, title: 'RolePatch' });
export type RolePatch = Static<typeof RolePatch>;

export const RoleListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  roleType: Type.Optional(Type.Array(Type.String({ pattern: '^(SYSTEM|DATA)(,(SYSTEM|DATA))*$' }), { description: 'SYSTEM or DATA, comma-separated for several' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  readonly: Type.Optional(Type.Boolean()),
});
export type RoleListQuery = Static<typeof RoleListQuery>;
