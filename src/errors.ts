import { STATUS_CODES } from 'node:http';

/** Every error code the service answers with, and its usual status (the contract's table). */
export const ERROR_CODES = {
  MALFORMED_REQUEST: 400,
  VALIDATION_FAILED: 400,
  DATASET_NOT_EDITABLE: 400,
  UNAUTHORIZED: 401,
  ACCESS_DENIED: 403,
  NOT_FOUND: 404,
  UNIQUE_CONSTRAINT_VIOLATION: 409,
  RESOURCE_IN_USE: 409,
  SAGA_IN_FLIGHT: 409,
  INVALID_STATE: 409,
  ROLE_READONLY: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  LAST_TENANT_ADMINISTRATOR: 409,
  PRECONDITION_FAILED: 412,
  FAILED_DEPENDENCY: 424,
  PAYLOAD_TOO_LARGE: 413,
  NOT_ACCEPTABLE: 406,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UPSTREAM_UNAVAILABLE: 502,
  SERVICE_UNAVAILABLE: 503,
  UPSTREAM_TIMEOUT: 504,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError { field: string; message: string }

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  fieldErrors?: FieldError[];
  [extension: string]: unknown;
}

/** A domain error: thrown anywhere, rendered as a problem object by the one error handler. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail: string,
    /** `retryAfterSeconds`: the answer's Retry-After (a 503 or 409 the client should try again after). */
    readonly options: { status?: number; fieldErrors?: FieldError[]; extensions?: Record<string, unknown>; retryAfterSeconds?: number } = {},
  ) {
    super(detail);
    this.status = options.status ?? ERROR_CODES[code];
  }
}

export const notFound = (what: string, id: string) => new AppError('NOT_FOUND', `${what} ${id} does not exist`);

export const accessDenied = (permission: string) =>
  new AppError('ACCESS_DENIED', `This operation needs the permission ${permission}`);

export const validationFailed = (field: string, message: string, detail = `${field}: ${message}`) =>
  new AppError('VALIDATION_FAILED', detail, { fieldErrors: [{ field, message }] });

export function problemOf(error: AppError, instance: string): Problem {
  const problem: Problem = {
    type: `urn:platform:error:${error.code}`,
    title: STATUS_CODES[error.status] ?? 'Error',
    status: error.status,
    detail: error.message,
    instance,
  };
  if (error.options.fieldErrors) problem.fieldErrors = error.options.fieldErrors;
  return Object.assign(problem, error.options.extensions);
}
