import type { ColumnType, Generated, Selectable } from 'kysely';

/** Timestamps are written by the database (default now()) and read back as Date. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export type ScopeType = 'TENANT' | 'DATASTRUCTURE' | 'DATASOURCE' | 'DATASET' | 'DATAPOOL';
export type RoleType = 'SYSTEM' | 'DATA';
export type PermissionType = 'SYSTEM' | 'DATA';
export type Title = 'MR' | 'MS' | 'OTHER';

export interface TenantTable { id: string; name: string; created_at: Timestamp }

export interface PermissionsTable {
  id: string;
  name: string;
  description: string;
  permission_type: PermissionType;
  category: 'TENANT_ADMINISTRATION' | 'DATA';
  source: 'INTERNAL' | 'DATASET_DASHBOARD';
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface RolesTable {
  id: string;
  name: string;
  description: string;
  role_type: RoleType;
  readonly: Generated<boolean>;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface RolePermissionsTable { role_id: string; permission_id: string }

export interface UsersTable {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  phone: string | null;
  title: Title;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface GroupsTable {
  id: string;
  name: string;
  description: string;
  contact_user_id: string | null;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface GroupMembersTable { group_id: string; user_id: string }

export interface DatapoolsTable {
  id: string;
  name: string;
  description: string;
  contact_person_id: string | null;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface AssignmentsTable {
  id: string;
  group_id: string;
  role_id: string;
  scope_type: ScopeType;
  scope_id: string;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface IdempotencyKeysTable {
  caller: string;
  key: string;
  request_hash: string;
  status: number;
  headers: ColumnType<Record<string, string>, string, string>;
  body: string;
  created_at: Timestamp;
  /** Set while the first request runs; see migration 0003. */
  lease_expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface DB {
  tenant: TenantTable;
  permissions: PermissionsTable;
  roles: RolesTable;
  role_permissions: RolePermissionsTable;
  users: UsersTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  datapools: DatapoolsTable;
  assignments: AssignmentsTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type PermissionRow = Selectable<PermissionsTable>;
