import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';
import { ScopedAssignmentInput } from '../assignments/index.js';

export const ReleaseStatusSchema = Type.Enum(['DRAFT', 'AVAILABLE']);
const Description = Type.String({ maxLength: 4000 });
const AnyJson = Type.Unsafe<unknown>({ description: 'any JSON value' });

export const VersionSummary = Type.Object({
  id: Uuid,
  dataStructureId: Uuid,
  version: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  status: ReleaseStatusSchema,
  source: Type.Literal('OWN'),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'DataStructureVersionSummary' });
export type VersionSummary = Static<typeof VersionSummary>;

export const DataStructure = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  datapool: Type.Union([Ref, Type.Null()]),
  createdFromDataSource: Type.Boolean(),
  dataStructureVersions: Type.Array(VersionSummary, { description: 'oldest first' }),
  dataStructureStatus: ReleaseStatusSchema,
  inUse: Type.Boolean({ description: 'a data source references one of its versions' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'DataStructure' });
export type DataStructure = Static<typeof DataStructure>;

const fields = {
  name: NonEmpty({ maxLength: 255 }),
  datapoolId: Type.String({ ...Uuid, description: 'the datapool holding the data structure' }),
  assignments: Type.Array(ScopedAssignmentInput, {
    uniqueItems: true, maxItems: 1000, description: "every assignment on this data structure; when present, its assignments become exactly these",
  }),
  dataStructureVersionIds: Type.Array(Uuid, { description: 'sent by existing clients and ignored: versions have their own paths' }),
};

/** Create and PUT: an explicit null for an optional field means "not given". */
export const DataStructureInput = Type.Object({
  name: fields.name,
  description: Type.Optional(Nullable(Description)),
  datapoolId: Type.Optional(Nullable(fields.datapoolId)),
  createdFromDataSource: Type.Optional(Nullable(Type.Boolean())),
  assignments: Type.Optional(Nullable(fields.assignments)),
  dataStructureVersionIds: Type.Optional(Nullable(fields.dataStructureVersionIds)),
}, { additionalProperties: false, title: 'DataStructureInput' });
export type DataStructureInput = Static<typeof DataStructureInput>;

export const DataStructurePatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(Description)),
  datapoolId: Type.Optional(Nullable(fields.datapoolId)),
  createdFromDataSource: Type.Optional(Type.Boolean()),
  assignments: Type.Optional(fields.assignments),
  dataStructureVersionIds: Type.Optional(Nullable(fields.dataStructureVersionIds)),
}, { additionalProperties: false, title: 'DataStructurePatch' });
export type DataStructurePatch = Static<typeof DataStructurePatch>;

/** released/meta of a structure (and of a data source): name and description, merge semantics. */
export const ReleasedMetaPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(Nullable(Description)),
}, { additionalProperties: false, title: 'ReleasedMetaPatch' });
export type ReleasedMetaPatch = Static<typeof ReleasedMetaPatch>;

export const DataStructureListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  dataStructureStatus: Type.Optional(ReleaseStatusSchema),
});
export type DataStructureListQuery = Static<typeof DataStructureListQuery>;

export const DataStructureVersion = Type.Object({
  id: Uuid,
  dataStructure: Ref,
  dataStructureVersionSource: Type.Literal('OWN'),
  version: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  modelName: Type.Union([Type.String(), Type.Null()]),
  model: AnyJson,
  styles: Type.Record(Type.String(), Type.Unknown()),
  dataStructureVersionStatus: ReleaseStatusSchema,
  inUse: Type.Boolean({ description: 'a data source references it' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'DataStructureVersion' });
export type DataStructureVersion = Static<typeof DataStructureVersion>;

const versionFields = {
  source: Type.Literal('OWN'),
  version: Type.String({ minLength: 1, maxLength: 32, pattern: '\\S', description: 'unique within the structure; left out on create: the first of "1", "2", ... not taken' }),
  modelName: Type.String({ maxLength: 255 }),
  model: Type.Unsafe<unknown>({ description: 'the JSON Schema of the records (draft 2020-12; draft-07 or 2019-09 by $schema); null while DRAFT' }),
  styles: Type.Record(Type.String(), Type.Unknown()),
};

export const VersionInput = Type.Object({
  dataStructureVersionSource: versionFields.source,
  version: Type.Optional(Nullable(versionFields.version)),
  description: Type.Optional(Nullable(Description)),
  modelName: Type.Optional(Nullable(versionFields.modelName)),
  model: Type.Optional(versionFields.model),
  styles: Type.Optional(Type.Union([versionFields.styles, Type.Null()])),
}, { additionalProperties: false, title: 'DataStructureVersionInput' });
export type VersionInput = Static<typeof VersionInput>;

export const VersionPatch = Type.Object({
  dataStructureVersionSource: Type.Optional(versionFields.source),
  version: Type.Optional(versionFields.version),
  description: Type.Optional(Nullable(Description)),
  modelName: Type.Optional(Nullable(versionFields.modelName)),
  model: Type.Optional(versionFields.model),
  styles: Type.Optional(Type.Union([versionFields.styles, Type.Null()])),
}, { additionalProperties: false, title: 'DataStructureVersionPatch' });
export type VersionPatch = Static<typeof VersionPatch>;

export const VersionReleasedMetaPatch = Type.Object({
  description: Type.Optional(Nullable(Description)),
  modelName: Type.Optional(Nullable(versionFields.modelName)),
}, { additionalProperties: false, title: 'DataStructureVersionReleasedMetaPatch' });
export type VersionReleasedMetaPatch = Static<typeof VersionReleasedMetaPatch>;

export const VersionParams = Type.Object({ dataStructureId: Uuid, versionId: Uuid });
export const StructureParams = Type.Object({ dataStructureId: Uuid });
