import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { responses } from '../../http/schemas.js';
import { AuditEvent, AuditEventListQuery } from './audit.schemas.js';
import { listAuditEvents } from './audit.service.js';

const tags = ['Audit events'];

/** The audit log is read-only over HTTP: events are written by the changes themselves, never through a route. */
export const auditRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/audit-events', {
    schema: {
      tags,
      summary: 'List audit events (newest first by default; needs ASSIGNMENT_READ at TENANT scope)',
      description: 'Changes of datasets, assignments, group members, role permissions, user memberships and personal access tokens, each written in the transaction of its change. `from` and `to` are inclusive.',
      querystring: AuditEventListQuery,
      response: responses({ 200: PageOf(AuditEvent, 'AuditEvent') }, [400, 401, 403]),
    },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'ASSIGNMENT_READ');
    return listAuditEvents(ctx.db, request.query);
  });
};
