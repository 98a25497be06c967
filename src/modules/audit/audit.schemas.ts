import { Type, type Static } from 'typebox';
import { DateTime, Uuid } from '../../http/schemas.js';
import { SortParameter, sharedListParameters } from '../../http/page.js';

export const AUDIT_EVENT_TYPES = [
  'DATASET_CREATED', 'DATASET_UPDATED', 'DATASET_STAGED', 'DATASET_UNSTAGED', 'DATASET_RELEASED', 'DATASET_UNRELEASED',
  'DATASET_DELETED', 'ASSIGNMENT_CREATED', 'ASSIGNMENT_DELETED', 'GROUP_MEMBERS_CHANGED', 'ROLE_PERMISSIONS_CHANGED',
  'USER_GROUPS_CHANGED', 'TOKEN_CREATED', 'TOKEN_DELETED',
] as const;
export const AuditEventTypeSchema = Type.Enum([...AUDIT_EVENT_TYPES]);

/** What a change looked like before or after, as the event records it (any JSON; null where the object did not exist). */
const State = Type.Unknown({ description: "the changed object's relevant state; null where it did not exist" });

export const AuditEvent = Type.Object({
  id: Uuid,
  occurredAt: DateTime,
  type: AuditEventTypeSchema,
  actorId: Type.Union([Uuid, Type.Null()], { description: 'the user who made the change; null when no known user did' }),
  objectType: Type.Enum(['DATASET', 'ASSIGNMENT', 'GROUP', 'ROLE', 'USER', 'PERSONAL_ACCESS_TOKEN']),
  objectId: Uuid,
  before: State,
  after: State,
  requestId: Type.Union([Type.String(), Type.Null()], { description: 'the X-Request-Id of the request that made the change' }),
}, { title: 'AuditEvent' });
export type AuditEvent = Static<typeof AuditEvent>;

const { page, size, id } = sharedListParameters;

export const AuditEventListQuery = Type.Object({
  page, size, id,
  sort: SortParameter('occurredAt,DESC'),
  objectId: Type.Optional(Uuid),
  actorId: Type.Optional(Uuid),
  type: Type.Optional(Type.Array(AuditEventTypeSchema, { description: 'repeatable: events of any of these types' })),
  from: Type.Optional(DateTime),
  to: Type.Optional(DateTime),
});
export type AuditEventListQuery = Static<typeof AuditEventListQuery>;
