import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';

export const DatasetParams = Type.Object({ dataSetId: Uuid });
export const PipelineParams = Type.Object({ dataSetId: Uuid, id: Uuid });

/** What the runtime reports about a running pipeline (the contract's "Pipelines at run time"). */
export const RuntimeStatus = Type.Object({
  state: Type.Union([Type.Literal('STARTING'), Type.Literal('RUNNING'), Type.Literal('RETRYING'), Type.Literal('STOPPED'), Type.Literal('FAILED')]),
  message: Type.String({ description: 'why the pipeline is in this state; never a credential' }),
  occurredAt: DateTime,
  source: Type.Union([Type.Literal('CONNECTOR'), Type.Literal('MAPPING'), Type.Literal('WRITER'), Type.Literal('RUNTIME'), Type.Null()]),
  lastEventId: Uuid,
  received: Type.Integer({ description: 'records received since the pipeline last started' }),
  written: Type.Integer(),
  rejected: Type.Integer({ description: 'records that failed mapping or validation (see the rejections)' }),
  skipped: Type.Integer({ description: "records the mapping's filter left out, and records already stored (redeliveries)" }),
  lastReceivedAt: Type.Union([DateTime, Type.Null()]),
}, { title: 'PipelineRuntimeStatus' });

/** A record a pipeline could not write, kept 7 days or 10,000 per pipeline. */
export const Rejection = Type.Object({
  id: Uuid,
  receivedAt: DateTime,
  dataSourceId: Type.Union([Uuid, Type.Null()]),
  reason: Type.String(),
  field: Type.Union([Type.String(), Type.Null()], { description: 'the target path at fault, or null' }),
  record: Type.Unknown({ description: 'the record as received (a JSON value; a payload that was not JSON as its text), cut at 64 KiB' }),
}, { title: 'PipelineRejection' });

export const RejectionListQuery = Type.Object({
  page: sharedListParameters.page,
  size: sharedListParameters.size,
});
export type RejectionListQuery = Static<typeof RejectionListQuery>;

export const Pipeline = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  dataSourceIds: Type.Array(Uuid),
  mappingRef: Type.Union([Type.String(), Type.Null()], { description: 'a mapping URN (logical or versioned) of the same dataset' }),
  namedApiSlug: Type.Union([Type.String(), Type.Null()], { description: 'the slug of the named API of the dataset the pipeline fills' }),
  schedule: Type.Union([Type.String(), Type.Null()], { description: 'a cron expression (five fields, or six with seconds first), or null' }),
  runtimeStatus: Type.Union([RuntimeStatus, Type.Null()], { description: 'what the runtime reports; null while the dataset is not AVAILABLE' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Pipeline' });
export type Pipeline = Static<typeof Pipeline>;

const fields = {
  name: NonEmpty(),
  description: Type.String({ maxLength: 4000 }),
  dataSourceIds: Type.Array(Uuid, { uniqueItems: true, maxItems: 100, description: 'the data sources the pipeline reads; checked at stage and release' }),
  mappingRef: Type.String({ minLength: 1, maxLength: 1000, description: 'urn:platform:mapping:{dataSetId}:{name}[:{version}]; whether it exists is checked at stage and release' }),
  namedApiSlug: Type.String({ maxLength: 32, pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$', description: "one of the dataset's named APIs; checked at stage and release" }),
  schedule: Type.String({
    minLength: 1, maxLength: 255,
    description: 'cron: minute hour day-of-month month day-of-week, or six fields with second (0-59) first; how often an SQL source is polled',
  }),
};

/**
 * Members that CIVITAS/CORE clients send with a pipeline (an editor's graph and its parts): taken,
 * whatever JSON they hold, and dropped; never stored, never answered.
 */
const ignored = {
  styles: Type.Optional(Type.Unknown({ description: 'accepted for CIVITAS/CORE clients and ignored: not stored, not returned' })),
  model: Type.Optional(Type.Unknown({ description: "accepted for CIVITAS/CORE clients (an editor's graph) and ignored: not stored, not returned" })),
  persistences: Type.Optional(Type.Unknown({ description: 'accepted for CIVITAS/CORE clients and ignored: not stored, not returned' })),
};

/** Create and PUT: an explicit null for an optional field means "not given" (cleared on PUT). */
export const PipelineInput = Type.Object({
  name: fields.name,
  description: Type.Optional(Nullable(fields.description)),
  dataSourceIds: Type.Optional(Nullable(fields.dataSourceIds)),
  mappingRef: Type.Optional(Nullable(fields.mappingRef)),
  namedApiSlug: Type.Optional(Nullable(fields.namedApiSlug)),
  schedule: Type.Optional(Nullable(fields.schedule)),
  ...ignored,
}, { additionalProperties: false, title: 'PipelineInput' });
export type PipelineInput = Static<typeof PipelineInput>;

/** PATCH: only the given fields change; null clears them (all but name). */
export const PipelinePatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(fields.description)),
  dataSourceIds: Type.Optional(Nullable(fields.dataSourceIds)),
  mappingRef: Type.Optional(Nullable(fields.mappingRef)),
  namedApiSlug: Type.Optional(Nullable(fields.namedApiSlug)),
  schedule: Type.Optional(Nullable(fields.schedule)),
  ...ignored,
}, { additionalProperties: false, title: 'PipelinePatch' });
export type PipelinePatch = Static<typeof PipelinePatch>;

export const PipelineListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
});
export type PipelineListQuery = Static<typeof PipelineListQuery>;
