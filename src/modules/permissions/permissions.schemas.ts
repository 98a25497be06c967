import { Type, type Static } from 'typebox';
import { DateTime, Uuid } from '../../http/schemas.js';
import { SortParameter, sharedFilterParameters } from '../../http/page.js';

export const PermissionTypeSchema = Type.Enum(['SYSTEM', 'DATA']);
export const PermissionCategorySchema = Type.Enum(['TENANT_ADMINISTRATION', 'DATA']);
export const PermissionSourceSchema = Type.Enum(['INTERNAL', 'DATASET_DASHBOARD']);

export const Permission = Type.Object({
  id: Uuid,
  name: Type.String({ examples: ['DATASET_READ'] }),
  description: Type.String(),
  permissionType: PermissionTypeSchema,
  category: PermissionCategorySchema,
  source: PermissionSourceSchema,
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Permission' });
export type Permission = Static<typeof Permission>;

/** Not paginated: the catalogue is small and the specification lists it as a plain array. */
export const PermissionListQuery = Type.Object({
  sort: SortParameter('name,asc'),
  ...sharedFilterParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  permissionType: Type.Optional(PermissionTypeSchema),
  category: Type.Optional(PermissionCategorySchema),
  source: Type.Optional(PermissionSourceSchema),
});
export type PermissionListQuery = Static<typeof PermissionListQuery>;
