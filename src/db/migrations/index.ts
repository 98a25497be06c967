import type { Migration } from 'kysely';
import * as identityAndAccess from './0001_identity_and_access.js';
import * as scopesGroupsAndIdentity from './0002_scopes_groups_and_identity.js';
import * as idempotencyLease from './0003_idempotency_lease.js';
import * as jobs from './0004_jobs.js';
import * as datasets from './0005_datasets.js';
import * as datasetParts from './0006_dataset_parts.js';
import * as dataSourcesAndStructures from './0007_data_sources_and_structures.js';
import * as auditEvents from './0008_audit_events.js';
import * as searchIndexes from './0010_search_indexes.js';
import * as gatewayRoutes from './0011_gateway_routes.js';
import * as namedApiUpstream from './0012_named_api_upstream.js';
import * as accessVersion from './0013_access_version.js';
import * as accessVersionAtCommit from './0014_access_version_at_commit.js';
import * as secretsKey from './0015_secrets_key.js';
import * as pipelineRuntime from './0016_pipeline_runtime.js';
import * as personalAccessTokens from './0017_personal_access_tokens.js';
import * as staMultiDatastreams from './0019_sta_multi_datastreams.js';
import * as staStoredStreamProperties from './0020_sta_stored_stream_properties.js';
import * as routeVersionAtCommit from './0021_route_version_at_commit.js';
import * as datasetCatalogue from './0022_dataset_catalogue.js';
import * as payloadDataVersions from './0023_payload_data_versions.js';
import * as mqttOutbox from './0024_mqtt_outbox.js';
import * as staStreamBoundsAtCommit from './0025_sta_stream_bounds_at_commit.js';

/**
 * Every migration, in order. Listed statically (not read from the folder) so that the same list
 * works from TypeScript sources under tsx and from the compiled dist/ tree.
 */
export const migrations: Record<string, Migration> = {
  '0001_identity_and_access': identityAndAccess,
  '0002_scopes_groups_and_identity': scopesGroupsAndIdentity,
  '0003_idempotency_lease': idempotencyLease,
  '0004_jobs': jobs,
  '0005_datasets': datasets,
  '0006_dataset_parts': datasetParts,
  '0007_data_sources_and_structures': dataSourcesAndStructures,
  '0008_audit_events': auditEvents,
  '0010_search_indexes': searchIndexes,
  '0011_gateway_routes': gatewayRoutes,
  '0012_named_api_upstream': namedApiUpstream,
  '0013_access_version': accessVersion,
  '0014_access_version_at_commit': accessVersionAtCommit,
  '0015_secrets_key': secretsKey,
  '0016_pipeline_runtime': pipelineRuntime,
  '0017_personal_access_tokens': personalAccessTokens,
  '0019_sta_multi_datastreams': staMultiDatastreams,
  '0020_sta_stored_stream_properties': staStoredStreamProperties,
  '0021_route_version_at_commit': routeVersionAtCommit,
  '0022_dataset_catalogue': datasetCatalogue,
  '0023_payload_data_versions': payloadDataVersions,
  '0024_mqtt_outbox': mqttOutbox,
  '0025_sta_stream_bounds_at_commit': staStreamBoundsAtCommit,
};
