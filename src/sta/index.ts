/** The SensorThings server's public face: the gateway and app.ts need nothing else. */
export { createStaServer, mqttEndpointsOf } from './server.js';
export type { StaServerDeps, StaLimits } from './server-deps.js';
export type { StaRequest, StaResponse, StaServer } from './types.js';
export type { Change as StaChange } from './write-sql.js';
// Upstream mode parses and authorizes a `$batch` as our own server does, with the same envelope.
export { isOnBase, parseBatchEnvelope, withoutTrailingSlashes, type BatchEntry } from './batch-envelope.js';
export { batchErrorResponse, failedDependency, type BatchResponse } from './batch.js';
// The standard's multipart batch, turned into the JSON envelope and back (the gateway does both ends).
export { isMultipartMixed, multipartAnswer, multipartElsewhere, parseMultipartBatch, type MultipartBatch } from './batch-multipart.js';
// The pipelines' writer into an STA API (the runtime wires it as the PayloadWriter of STA datasets).
export { createObservationWriter, type ObservationWriterDeps } from './pipeline-writes.js';
// What the open-data catalogue says of an STA API's data (its box and its phenomenon times).
export { staDataExtent, type StaDataExtent } from './data-extent.js';
// Its bulk downloads' paths (the gateway serves them with validators and streams them).
export { isStaDownloadPath } from './downloads.js';
