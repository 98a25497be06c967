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
/** A deadlock PostgreSQL broke by aborting this transaction, or a serialization failure: nothing was committed. */
export const isTransactionConflict = (error: unknown) => sqlStateOf(error) === '40P01' || sqlStateOf(error) === '40001';

/** Runs a whole transaction again (at most `attempts` times in all) when PostgreSQL aborted it for a conflict. */
export async function retriedOnConflict<T>(transaction: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= attempts || !isTransactionConflict(error)) throw error;
    }
  }
}

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
