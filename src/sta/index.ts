/** The SensorThings server's public face: the gateway and app.ts need nothing else. */
export { createStaServer, type StaServerDeps, type StaLimits } from './server.js';
export type { StaRequest, StaResponse, StaServer } from './types.js';
export type { Change as StaChange } from './write-sql.js';
