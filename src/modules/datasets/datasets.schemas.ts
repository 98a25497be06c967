import { Type, type Static } from 'typebox';
import { DateTime, NonEmpty, Nullable, Ref, Uuid } from '../../http/schemas.js';
import { sharedListParameters, UuidList } from '../../http/page.js';
import { ScopedAssignmentInput } from '../assignments/index.js';

export const DatasetStatusSchema = Type.Enum(['DRAFT', 'READY', 'AVAILABLE']);
export const SagaTypeSchema = Type.Enum(['CREATE', 'DELETE', 'RELEASE', 'UNRELEASE']);
const StandardSchema = Type.Enum(['OWS', 'STA']);

/** Slugs that would shadow the gateway's own paths. */
export const RESERVED_SLUGS = ['api', 'apis', 'v1', 'admin'];

export const NamedApi = Type.Object({
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  slug: Type.String(),
  standard: StandardSchema,
  version: Type.Union([Type.String(), Type.Null()]),
  upstreamUrl: Type.Union([Type.String(), Type.Null()], { description: 'STA only: the SensorThings server the gateway proxies this API to (upstream mode), or null for the service\'s own' }),
}, { title: 'NamedApi' });
export type NamedApi = Static<typeof NamedApi>;

// What consumers see of a published API: not where it is served from.
const { upstreamUrl: _internal, ...publicNamedApiProperties } = NamedApi.properties;
export const PublishedApi = Type.Object({
  ...publicNamedApiProperties,
  previewUrl: Type.String({ description: 'the base URL of the payload API: {DATA_API_URL}/v1/datasets/{id}/{slug}' }),
}, { title: 'PublishedNamedApi' });

export const NamedApiInput = Type.Object({
  name: NonEmpty(),
  slug: Type.String({ maxLength: 32, pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$', description: `unique within the dataset; not ${RESERVED_SLUGS.join(', ')}` }),
  standard: StandardSchema,
  version: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
  description: Type.Optional(Nullable(Type.String({ maxLength: 150 }))),
  upstreamUrl: Type.Optional(Nullable(Type.String({
    maxLength: 2048, pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
    description: 'STA only: proxy this API to an existing SensorThings server (e.g. FROST-Server\'s …/v1.1); its origin must be listed in STA_UPSTREAM_ORIGINS',
  }))),
}, { additionalProperties: false, title: 'NamedApiInput' });
export type NamedApiInput = Static<typeof NamedApiInput>;

const EU_TABLE = 'http://publications.europa.eu/resource/authority';
const CODE = { maxLength: 64 };

/** The dataset's metadata for the DCAT-AP catalogue, as stored (null: the catalogue's default, or none). */
export const CatalogueMetadata = Type.Object({
  license: Type.Union([Type.String(), Type.Null()], { description: `a code of the EU licence table (${EU_TABLE}/licence/{code}); null: CATALOGUE_DEFAULT_LICENSE` }),
  keywords: Type.Array(Type.String()),
  themes: Type.Array(Type.String(), { description: `EU data-theme codes (${EU_TABLE}/data-theme/{code})` }),
  contactEmail: Type.Union([Type.String(), Type.Null()], { description: 'null: CATALOGUE_CONTACT_EMAIL' }),
  accrualPeriodicity: Type.Union([Type.String(), Type.Null()], { description: `an EU frequency code (${EU_TABLE}/frequency/{code})` }),
  hvdCategories: Type.Array(Type.String(), { description: 'EU High-Value Dataset category codes (http://data.europa.eu/bna/{code})' }),
  landingPage: Type.Union([Type.String(), Type.Null()]),
}, { title: 'CatalogueMetadata' });

/** A merge patch (RFC 7396) of the catalogue metadata: members left out stay, null clears one. */
export const CatalogueMetadataInput = Type.Object({
  license: Type.Optional(Nullable(Type.String({ ...CODE, description: `a code of the EU licence table (${EU_TABLE}/licence/{code}), e.g. CC_BY_4_0, CC0` }))),
  keywords: Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }), { maxItems: 50 }))),
  themes: Type.Optional(Nullable(Type.Array(Type.String(CODE), { maxItems: 20, description: `EU data-theme codes (${EU_TABLE}/data-theme/{code}): TRAN, ENVI, …` }))),
  contactEmail: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
  accrualPeriodicity: Type.Optional(Nullable(Type.String({ ...CODE, description: `an EU frequency code (${EU_TABLE}/frequency/{code}): CONT, DAILY, …` }))),
  hvdCategories: Type.Optional(Nullable(Type.Array(Type.String(CODE), { maxItems: 50, description: 'EU High-Value Dataset category codes (http://data.europa.eu/bna/{code})' }))),
  landingPage: Type.Optional(Nullable(Type.String({ maxLength: 2048, pattern: '^https?://[^\\s/?#]+([/?#]\\S*)?$', description: 'an absolute http(s) URL' }))),
}, { additionalProperties: false, title: 'CatalogueMetadataInput', description: 'merged into the stored metadata (RFC 7396): members left out stay, null clears one' });

const PipelineSummary = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  runtimeStatus: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
});

export const Dataset = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Type.String(),
  dataSetStatus: DatasetStatusSchema,
  datapool: Type.Union([Ref, Type.Null()]),
  createdBy: Type.Union([Ref, Type.Null()]),
  openDataAccess: Type.Boolean(),
  namedApis: Type.Array(NamedApi),
  pendingSagaType: Type.Union([SagaTypeSchema, Type.Null()], { description: 'the asynchronous operation under way (CREATE, DELETE, RELEASE, UNRELEASE), or null' }),
  provisioned: Type.Boolean({ description: "whether the dataset's storage exists" }),
  sagaError: Type.Union([Type.Object({
    sagaType: SagaTypeSchema, message: Type.String(), occurredAt: DateTime,
  }), Type.Null()], { description: 'why the last asynchronous operation gave up after its retries, or null' }),
  pipelines: Type.Array(PipelineSummary),
  publicUrl: Type.Union([Type.String(), Type.Null()], { description: '{DATA_API_URL}/v1/datasets/{id} while AVAILABLE, else null' }),
  catalogue: CatalogueMetadata,
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Dataset' });
export type Dataset = Static<typeof Dataset>;

const fields = {
  name: NonEmpty({ minLength: 3, maxLength: 255 }),
  description: NonEmpty({ maxLength: 4000 }),
  datapoolId: Type.String({ ...Uuid, description: 'the datapool holding the dataset' }),
  openDataAccess: Type.Boolean({ description: 'anonymous payload reads allowed; default false' }),
  assignments: Type.Array(ScopedAssignmentInput, {
    uniqueItems: true, maxItems: 1000,
    description: "every assignment on this dataset; when present, the dataset's assignments become exactly these",
  }),
  namedApis: Type.Array(NamedApiInput, { maxItems: 100 }),
  catalogue: CatalogueMetadataInput,
};

/** Create and PUT: an explicit null for an optional field means "not given". */
export const DatasetInput = Type.Object({
  name: fields.name,
  description: fields.description,
  datapoolId: Type.Optional(Nullable(fields.datapoolId)),
  openDataAccess: Type.Optional(Nullable(fields.openDataAccess)),
  assignments: Type.Optional(Nullable(fields.assignments)),
  namedApis: Type.Optional(Nullable(fields.namedApis)),
  catalogue: Type.Optional(fields.catalogue),
}, { additionalProperties: false, title: 'DatasetInput' });
export type DatasetInput = Static<typeof DatasetInput>;

/** PATCH: only the given fields change; null clears the datapool and the named APIs. */
export const DatasetPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(fields.description),
  datapoolId: Type.Optional(Nullable(fields.datapoolId)),
  openDataAccess: Type.Optional(fields.openDataAccess),
  assignments: Type.Optional(fields.assignments),
  namedApis: Type.Optional(Nullable(fields.namedApis)),
  catalogue: Type.Optional(fields.catalogue),
}, { additionalProperties: false, title: 'DatasetPatch' });
export type DatasetPatch = Static<typeof DatasetPatch>;

/**
 * The metadata updates of READY and released datasets: a JSON merge patch (RFC 7396) of the
 * metadata. namedApis is not metadata (400), and null for assignments answers 400 too.
 */
export const DatasetMetadataPatch = Type.Object({
  name: Type.Optional(fields.name),
  description: Type.Optional(fields.description),
  datapoolId: Type.Optional(Nullable(fields.datapoolId)),
  openDataAccess: Type.Optional(fields.openDataAccess),
  assignments: Type.Optional(fields.assignments),
  catalogue: Type.Optional(fields.catalogue),
}, { additionalProperties: false, title: 'DatasetMetadataPatch' });
export type DatasetMetadataPatch = Static<typeof DatasetMetadataPatch>;

export const DatasetListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
  description: Type.Optional(Type.String({ description: 'partial match' })),
  q: Type.Optional(Type.String({ description: 'partial match in name or description' })),
  datapoolIds: Type.Optional(Type.Array(UuidList, { description: 'datapool ids, comma-separated: datasets in any of them' })),
  includePendingDelete: Type.Optional(Type.Boolean({ default: false, description: 'true lists the datasets being deleted too' })),
});
export type DatasetListQuery = Static<typeof DatasetListQuery>;
