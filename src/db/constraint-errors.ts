import { AppError } from '../errors.js';

/** PostgreSQL's SQLSTATE of an error from pg or PGlite, when it is one. */
const sqlStateOf = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string'
    ? (error as { code: string }).code
    : undefined;

/** The name of the constraint an integrity error names (pg and PGlite both report it). */
export const constraintOf = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && typeof (error as { constraint?: unknown }).constraint === 'string'
    ? (error as { constraint: string }).constraint
    : undefined;

export const isUniqueViolation = (error: unknown) => sqlStateOf(error) === '23505';
export const isForeignKeyViolation = (error: unknown) => sqlStateOf(error) === '23503';

/**
 * Runs a write and turns a unique-index violation into 409 UNIQUE_CONSTRAINT_VIOLATION with the
 * caller's own words, so that a race between two creates answers like the pre-check would.
 */
export async function uniquely<T>(write: () => Promise<T>, detail: string, field: string): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('UNIQUE_CONSTRAINT_VIOLATION', detail, { fieldErrors: [{ field, message: 'is already taken' }] });
    throw error;
  }
}
