import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';
import { ScopedAssignmentInput } from '../assignments/index.js';
import { VersionSummary } from '../datastructures/index.js';

const ConnectorTypeSchema = Type.Enum(['MQTT', 'SQL', 'HTTP']);
const StatusSchema = Type.Enum(['DRAFT', 'AVAILABLE']);
const ScopeTypeSchema = Type.Enum(['ALL', 'NONE', 'SPECIFIC']);
const Description = Type.String({ maxLength: 4000 });

const CONFIGURATION_DESCRIPTION = 'typed per connector (MQTT: urls, topics, qos, keepalive, connect_timeout, client_id, user, password, tls; '
  + 'SQL: driver, dsn, table, columns, where, prefix, suffix, init_statement, user, password, conn_max_idle_time, conn_max_life_time, conn_max_idle, conn_max_open, cursor_column (a column whose value only grows: where the last poll stopped; null: every poll reads every row); '
  + 'HTTP: url, method, headers, interval, records_pointer, user, password). Members of other connectors are dropped; secrets (password, headers named Authorization, Proxy-Authorization, Cookie or containing token, secret, key) '
  + 'are stored encrypted (AES-256-GCM) and read back as "********"; writing "********" keeps the stored one.';

export const DatapoolScope = Type.Object({
  type: ScopeTypeSchema,
  datapoolIds: Type.Array(Uuid, { description: 'the datapools of a SPECIFIC scope; empty otherwise' }),
}, { title: 'DatapoolScope' });

export const DataSource = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  connectorType: ConnectorTypeSchema,
  configuration: Type.Record(Type.String(), Type.Unknown(), { description: CONFIGURATION_DESCRIPTION }),
  dataStructureVersion: Type.Union([VersionSummary, Type.Null()]),
  datapoolScope: DatapoolScope,
  dataSourceStatus: StatusSchema,
  inUse: Type.Boolean({ description: 'a pipeline references it' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'DataSource' });
export type DataSource = Static<typeof DataSource>;

export const DatapoolScopeInput = Type.Object({
  type: ScopeTypeSchema,
  datapoolIds: Type.Optional(Nullable(Type.Array(Uuid, { uniqueItems: true, maxItems: 1000, description: 'non-empty with SPECIFIC, else empty' }))),
}, { additionalProperties: false, title: 'DatapoolScopeInput' });
export type DatapoolScopeInput = Static<typeof DatapoolScopeInput>;

const fields = {
  name: NonEmpty({ maxLength: 255 }),
  configuration: Type.Unsafe<unknown>({ description: `an object, ${CONFIGURATION_DESCRIPTION}` }),
  dataStructureVersionId: Type.String({ ...Uuid, description: 'an AVAILABLE version of an AVAILABLE data structure you may read' }),
  assignments: Type.Array(ScopedAssignmentInput, {
    uniqueItems: true, maxItems: 1000, description: 'every assignment on this data source; when present, its assignments become exactly these',
  }),
};

/** Create and PUT: an explicit null for an optional field means "not given". */
export const DataSourceInput = Type.Object({
  name: fields.name,
  description: Type.Optional(Nullable(Description)),
  connectorType: ConnectorTypeSchema,
  configuration: Type.Optional(fields.configuration),
  dataStructureVersionId: Type.Optional(Nullable(fields.dataStructureVersionId)),
  datapoolScope: Type.Optional(Nullable(DatapoolScopeInput)),
  assignments: Type.Optional(Nullable(fields.assignments)),
}, { additionalProperties: false, title: 'DataSourceInput' });
export type DataSourceInput = Static<typeof DataSourceInput>;

/** PATCH: only the given fields change; `configuration` merges member by member (null: all defaults). */
export const DataSourcePatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(Description)),
  connectorType: Type.Optional(ConnectorTypeSchema),
  configuration: Type.Optional(fields.configuration),
  dataStructureVersionId: Type.Optional(Nullable(fields.dataStructureVersionId)),
  datapoolScope: Type.Optional(DatapoolScopeInput),
  assignments: Type.Optional(fields.assignments),
}, { additionalProperties: false, title: 'DataSourcePatch' });
export type DataSourcePatch = Static<typeof DataSourcePatch>;

export const DataSourceListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  dataSourceStatus: Type.Optional(StatusSchema),
  connectorType: Type.Optional(ConnectorTypeSchema),
  datapoolId: Type.Optional(Type.String({ ...Uuid, description: 'data sources usable in this datapool: scope ALL, or SPECIFIC naming it' })),
  datapoolScopeType: Type.Optional(ScopeTypeSchema),
});
export type DataSourceListQuery = Static<typeof DataSourceListQuery>;

/**
 * The data sources a pipeline of a dataset may read: the list's own parameters without those the
 * route decides (status AVAILABLE; scope ALL or SPECIFIC naming the dataset's datapool).
 */
export const UsableDataSourceQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  connectorType: Type.Optional(ConnectorTypeSchema),
});
export type UsableDataSourceQuery = Static<typeof UsableDataSourceQuery>;

export const DatasetParams = Type.Object({ dataSetId: Uuid });

/** released/meta of an AVAILABLE data source: name and description, merge semantics. */
export const DataSourceReleasedMetaPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(Description)),
}, { additionalProperties: false, title: 'DataSourceReleasedMetaPatch' });
export type DataSourceReleasedMetaPatch = Static<typeof DataSourceReleasedMetaPatch>;
