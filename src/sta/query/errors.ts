import { AppError } from '../../errors.js';

/**
 * A SensorThings request the standard cannot parse or this server cannot answer as written: 400
 * VALIDATION_FAILED whose detail names where (the query option or the path), the 0-based position
 * and the token at fault, e.g. `$filter: unexpected 'eqq' at position 5`.
 */
export class StaQueryError extends AppError {
  readonly where: string;
  readonly token: string;
  constructor(where: string, readonly position: number, token: string, message: string) {
    // Both go back to the client (once per request of a `$batch`), and both may come from it (an
    // unknown option's name): a megabyte of either would only inflate the answer.
    const field = shorten(where), shown = shorten(token);
    super('VALIDATION_FAILED', `${field}: ${message} at position ${position} ('${shown}')`, {
      fieldErrors: [{ field, message: `${message} at position ${position} ('${shown}')` }],
    });
    this.where = field;
    this.token = shown;
  }
}

const MAX_TOKEN_LENGTH = 64;

const shorten = (text: string) => (text.length > MAX_TOKEN_LENGTH ? `${text.slice(0, MAX_TOKEN_LENGTH)}…` : text);
