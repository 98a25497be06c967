import { AppError } from '../../errors.js';

/**
 * A SensorThings request the standard cannot parse or this server cannot answer as written: 400
 * VALIDATION_FAILED whose detail names where (the query option or the path), the 0-based position
 * and the token at fault, e.g. `$filter: unexpected 'eqq' at position 5`.
 */
export class StaQueryError extends AppError {
  constructor(
    readonly where: string,
    readonly position: number,
    readonly token: string,
    message: string,
  ) {
    super('VALIDATION_FAILED', `${where}: ${message} at position ${position} ('${token}')`, {
      fieldErrors: [{ field: where, message: `${message} at position ${position} ('${token}')` }],
    });
  }
}
