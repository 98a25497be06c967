/** The audit module's public face: services record their changes through these, in their own transaction. */
export { actorOf, SYSTEM_ACTOR, type Actor } from './actor.js';
export { recordEvent, recordEvents, type AuditChange } from './audit.service.js';
export { auditRoutes } from './audit.routes.js';
