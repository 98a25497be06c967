import type { PermissionType, RoleType } from '../db/schema.js';
import { stableId } from './stable-id.js';

/** The permission catalogue of the contract. Seeded at every start; never written through the API. */
const SYSTEM_PERMISSIONS = {
  USER_READ: 'Read users',
  USER_WRITE: 'Create, change and delete users and their group memberships',
  GROUP_READ: 'Read groups',
  GROUP_WRITE: 'Create, change and delete groups',
  ROLE_READ: 'Read roles',
  ROLE_WRITE: 'Create, change and delete roles',
  ASSIGNMENT_READ: 'Read role assignments',
  ASSIGNMENT_WRITE: 'Create and delete role assignments',
  PERMISSION_READ: 'Read the permission catalogue',
  DATAPOOL_READ: 'Read datapools',
  DATAPOOL_WRITE: 'Create, change and delete datapools',
} as const;

const DATA_PERMISSIONS = {
  DATASET_READ: 'Read dataset metadata',
  DATASET_CREATE: 'Create datasets',
  DATASET_UPDATE: 'Change datasets, their styles, mappings and pipelines',
  DATASET_RELEASE: 'Release and unrelease datasets',
  DATASET_DELETE: 'Delete datasets',
  DATASET_PAYLOAD_READ: 'Read the payload of published datasets',
  DATASET_PAYLOAD_WRITE: 'Write the payload of published datasets',
  DATASOURCE_READ: 'Read data sources',
  DATASOURCE_WRITE: 'Create, change, release and delete data sources',
  DATASTRUCTURE_READ: 'Read data structures',
  DATASTRUCTURE_WRITE: 'Create, change and delete data structures',
} as const;

export type PermissionName =
  | keyof typeof SYSTEM_PERMISSIONS
  | keyof typeof DATA_PERMISSIONS
  | 'DATASET_DASHBOARD_READ';

export interface CataloguePermission {
  id: string;
  name: PermissionName;
  description: string;
  permissionType: PermissionType;
  category: 'TENANT_ADMINISTRATION' | 'DATA';
  source: 'INTERNAL' | 'DATASET_DASHBOARD';
}

const permission = (
  name: PermissionName,
  description: string,
  permissionType: PermissionType,
  source: CataloguePermission['source'] = 'INTERNAL',
): CataloguePermission => ({
  id: stableId('permission', name),
  name,
  description,
  permissionType,
  category: permissionType === 'SYSTEM' ? 'TENANT_ADMINISTRATION' : 'DATA',
  source,
});

export const PERMISSION_CATALOGUE: readonly CataloguePermission[] = [
  ...Object.entries(SYSTEM_PERMISSIONS).map(([name, text]) => permission(name as PermissionName, text, 'SYSTEM')),
  ...Object.entries(DATA_PERMISSIONS).map(([name, text]) => permission(name as PermissionName, text, 'DATA')),
  permission('DATASET_DASHBOARD_READ', 'Read the dashboards of datasets', 'DATA', 'DATASET_DASHBOARD'),
];

export interface SeededRole {
  id: string;
  name: string;
  description: string;
  roleType: RoleType;
  permissions: readonly PermissionName[];
}

const allNames = PERMISSION_CATALOGUE.map((p) => p.name);

export const TENANT_ADMINISTRATOR_ROLE: SeededRole = {
  id: stableId('role', 'Tenant Administrator'),
  name: 'Tenant Administrator',
  description: 'Administers the whole tenant: every permission',
  roleType: 'SYSTEM',
  permissions: allNames,
};

export const SEEDED_ROLES: readonly SeededRole[] = [
  TENANT_ADMINISTRATOR_ROLE,
  {
    id: stableId('role', 'Data Owner'),
    name: 'Data Owner',
    description: 'Manages datasets and their payload',
    roleType: 'DATA',
    permissions: allNames.filter((name) => name.startsWith('DATASET_')),
  },
  {
    id: stableId('role', 'Data Consumer'),
    name: 'Data Consumer',
    description: 'Reads dataset metadata and payload',
    roleType: 'DATA',
    permissions: ['DATASET_READ', 'DATASET_PAYLOAD_READ'],
  },
];

export const ADMINISTRATORS_GROUP = {
  id: stableId('group', 'Administrators'),
  name: 'Administrators',
  description: 'Tenant administrators',
};
