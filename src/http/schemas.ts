import { Type, type Static, type TSchema } from 'typebox';

/** Building blocks shared by the modules' schemas. */
export const Uuid = Type.String({ format: 'uuid', 'x-lowercase': true });
/**
 * An RFC 3339 date-time that PostgreSQL can also hold: the format alone admits year 0000 and
 * offsets beyond ±15:59, which the database would refuse with an error.
 */
export const DateTime = Type.String({
  format: 'date-time',
  pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-](0\\d|1[0-5]):[0-5]\\d)$',
});
/**
 * A schema that also admits null, as one JSON Schema type list (`["string", "null"]`) rather than
 * an anyOf: a wrong value then gets one message, not one per branch. For primitive schemas (with
 * a single `type`) and enums.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const source = schema as unknown as { type?: unknown; enum?: unknown[] };
  if (Array.isArray(source.enum)) return Type.Unsafe<Static<T> | null>({ ...schema, enum: [...source.enum, null] });
  if (typeof source.type !== 'string') throw new TypeError('Nullable takes a schema with one type');
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [source.type, 'null'] });
}

export const Ref = Type.Object({ id: Uuid, name: Type.String() }, { title: 'Ref' });
export const IdParams = Type.Object({ id: Uuid });
export const ScopeTypeSchema = Type.Enum(['TENANT', 'DATASTRUCTURE', 'DATASOURCE', 'DATASET', 'DATAPOOL']);
export const RoleTypeSchema = Type.Enum(['SYSTEM', 'DATA']);
/** A non-empty text: at least one character that is not whitespace. */
export const NonEmpty = (options: { maxLength?: number; minLength?: number } = {}) =>
  Type.String({ minLength: options.minLength ?? 1, maxLength: options.maxLength ?? 255, pattern: '\\S' });

export const Problem = Type.Object(
  {
    type: Type.String({ examples: ['urn:platform:error:VALIDATION_FAILED'] }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    fieldErrors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true, title: 'Problem', description: 'RFC 9457 problem details' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (VALIDATION_FAILED, MALFORMED_REQUEST)',
  401: 'Token missing, expired or invalid (HTML body from the gateway)',
  403: 'Permission lacking (ACCESS_DENIED)',
  404: 'Unknown or unreadable resource (NOT_FOUND)',
  409: 'Conflict (UNIQUE_CONSTRAINT_VIOLATION, RESOURCE_IN_USE, ROLE_READONLY, ...)',
  412: 'Stale If-Match (PRECONDITION_FAILED)',
  413: 'Body over 1 MiB (PAYLOAD_TOO_LARGE)',
  415: 'Body is not JSON, not UTF-8, or compressed (UNSUPPORTED_MEDIA_TYPE)',
  422: 'State or validation precondition failed',
  500: 'Unexpected error (INTERNAL, with a correlation id)',
  503: 'The database is unreachable (SERVICE_UNAVAILABLE, with Retry-After)',
};

/** Response schemas of an operation: its success answer plus the problem answers it lists. */
export function responses(success: Record<number, unknown>, errorStatuses: number[]) {
  const out: Record<number, unknown> = { ...success };
  for (const status of [...errorStatuses, 500]) {
    out[status] = status === 401
      ? { description: ERROR_DESCRIPTIONS[401], content: { 'text/html': { schema: { type: 'string' } } } }
      : { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: { 'application/problem+json': { schema: Problem } } };
  }
  return out;
}

export const NoContent = { description: 'No content', type: 'null' };
