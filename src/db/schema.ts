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
  active: Generated<boolean>;
  /** The identity provider's subject (`sub`); a token with that `sub` is this user. */
  external_id: string | null;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface GroupsTable {
  id: string;
  name: string;
  description: string;
  contact_user_id: string | null;
  parent_group_id: string | null;
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
  /** Exactly one of these, the one of scope_type, is set and equals scope_id (a foreign key each). */
  tenant_id: string | null;
  datapool_id: string | null;
  dataset_id: string | null;
  datasource_id: string | null;
  datastructure_id: string | null;
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

export type DatasetStatus = 'DRAFT' | 'READY' | 'AVAILABLE';
export type SagaType = 'CREATE' | 'DELETE' | 'RELEASE' | 'UNRELEASE';

export interface DatasetsTable {
  id: string;
  name: string;
  description: string;
  datapool_id: string | null;
  created_by: string | null;
  open_data_access: Generated<boolean>;
  status: Generated<DatasetStatus>;
  pending_saga_type: SagaType | null;
  provisioned: Generated<boolean>;
  saga_error: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** The dataset's catalogue metadata (catalogue/metadata.ts), written as JSON text. */
  catalogue: ColumnType<Record<string, unknown>, string | undefined, string>;
  first_released_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  record_modified_at: Timestamp;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface DatasetNamedApisTable {
  dataset_id: string;
  position: number;
  slug: string;
  name: string;
  standard: 'OWS' | 'STA';
  version: string | null;
  description: string | null;
  upstream_url: string | null;
}

export interface DatasetStylesTable {
  id: string;
  dataset_id: string;
  name: string;
  sld_content: string;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface DatasetMappingsTable {
  dataset_id: string;
  name: string;
  version: number;
  content: ColumnType<unknown, string, string>;
  created_at: Timestamp;
}

export interface PipelinesTable {
  id: string;
  dataset_id: string;
  name: string;
  description: Generated<string>;
  data_source_ids: ColumnType<string[], string[] | undefined, string[]>;
  mapping_ref: string | null;
  named_api_slug: string | null;
  schedule: string | null;
  runtime_status: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  restart_generation: Generated<number>;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface PipelineRejectionsTable {
  id: string;
  pipeline_id: string;
  data_source_id: string | null;
  received_at: ColumnType<Date, Date | string, never>;
  reason: string;
  field: string | null;
  record: ColumnType<unknown, string | null, never>;
}

export interface RunnablePipelinesView {
  id: string;
  dataset_id: string;
  restart_generation: number;
}

export interface PipelinePositionsTable {
  pipeline_id: string;
  data_source_id: string;
  position: ColumnType<unknown, string, string>;
  updated_at: Generated<Date>;
}

export type ReleaseStatus = 'DRAFT' | 'AVAILABLE';
export type ConnectorType = 'MQTT' | 'SQL' | 'HTTP';
export type DatapoolScopeType = 'ALL' | 'NONE' | 'SPECIFIC';
type Json<T> = ColumnType<T, string, string>;

export interface DataStructuresTable {
  id: string;
  name: string;
  description: string | null;
  datapool_id: string | null;
  created_from_data_source: Generated<boolean>;
  status: Generated<ReleaseStatus>;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface DataStructureVersionsTable {
  id: string;
  data_structure_id: string;
  version: string;
  source: Generated<'OWN'>;
  description: string | null;
  model_name: string | null;
  model: ColumnType<unknown, string | null, string | null>;
  styles: Json<Record<string, unknown>>;
  status: Generated<ReleaseStatus>;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface DataSourcesTable {
  id: string;
  name: string;
  description: string | null;
  connector_type: ConnectorType;
  /** As stored: secrets in clear (they are masked on the way out), members of this connector only. */
  configuration: Json<Record<string, unknown>>;
  data_structure_version_id: string | null;
  datapool_scope_type: DatapoolScopeType;
  status: Generated<ReleaseStatus>;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export interface DataSourceDatapoolsTable { data_source_id: string; datapool_id: string }

export interface JobsTable {
  id: string;
  kind: string;
  subject_id: string;
  payload: ColumnType<Record<string, unknown>, string | undefined, string>;
  next_step: Generated<number>;
  state: Generated<'PENDING' | 'FAILED'>;
  attempts: Generated<number>;
  run_after: Timestamp;
  last_error: string | null;
  created_at: Timestamp;
  modified_at: Timestamp;
}

export type AuditEventType =
  | 'DATASET_CREATED' | 'DATASET_UPDATED' | 'DATASET_STAGED' | 'DATASET_UNSTAGED' | 'DATASET_RELEASED' | 'DATASET_UNRELEASED'
  | 'DATASET_DELETED' | 'ASSIGNMENT_CREATED' | 'ASSIGNMENT_DELETED' | 'GROUP_MEMBERS_CHANGED' | 'ROLE_PERMISSIONS_CHANGED'
  | 'USER_GROUPS_CHANGED' | 'TOKEN_CREATED' | 'TOKEN_DELETED';

/** Append-only (a trigger refuses UPDATE and DELETE); see migration 0008. */
export interface AuditEventsTable {
  id: string;
  occurred_at: ColumnType<Date, undefined, never>;
  type: AuditEventType;
  actor_id: string | null;
  object_type: string;
  object_id: string;
  before: ColumnType<unknown, string | null, never>;
  after: ColumnType<unknown, string | null, never>;
  request_id: string | null;
}

/** Migration 0017: a secret's SHA-256 digest (hex), never the secret. */
export interface PersonalAccessTokensTable {
  id: string;
  user_id: string;
  name: string;
  token_hash: string;
  dataset_ids: string[] | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  last_used_at: Date | null;
}

/** A view (migration 0011): the payload routes the data API gateway serves. */
export interface GatewayRoutesView {
  dataset_id: string;
  slug: string;
  standard: 'OWS' | 'STA';
  open_data_access: boolean;
  datapool_id: string | null;
  storage_schema: string;
  upstream_url: string | null;
}

/** A key generated for data source secrets (PostgreSQL without SECRETS_KEY). */
export interface SecretsKeysTable {
  name: string;
  key: Buffer;
  created_at: Generated<Date>;
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
  jobs: JobsTable;
  datasets: DatasetsTable;
  dataset_named_apis: DatasetNamedApisTable;
  dataset_styles: DatasetStylesTable;
  dataset_mappings: DatasetMappingsTable;
  pipelines: PipelinesTable;
  audit_events: AuditEventsTable;
  data_structures: DataStructuresTable;
  data_structure_versions: DataStructureVersionsTable;
  data_sources: DataSourcesTable;
  data_source_datapools: DataSourceDatapoolsTable;
  gateway_routes: GatewayRoutesView;
  secrets_keys: SecretsKeysTable;
  pipeline_rejections: PipelineRejectionsTable;
  pipeline_positions: PipelinePositionsTable;
  runnable_pipelines: RunnablePipelinesView;
  personal_access_tokens: PersonalAccessTokensTable;
}

export type PermissionRow = Selectable<PermissionsTable>;
