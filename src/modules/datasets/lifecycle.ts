import { AppError } from '../../errors.js';
import type { DatasetStatus, SagaType } from '../../db/schema.js';

/**
 * The dataset lifecycle as one table: for each operation, what it does from each state, or how it
 * is refused (status, code, detail), and which sagas under way block it. Services ask
 * `transition()` and never decide a state change on their own.
 */

export type LifecycleOperation = 'update' | 'stage' | 'unstage' | 'release' | 'unrelease' | 'delete' | 'readyMeta' | 'releasedMeta';

type Outcome =
  | { to: DatasetStatus | 'DELETED'; saga?: SagaType; validate?: 'stage' | 'release' }
  | { refuse: { status: number; code: 'INVALID_STATE' | 'DATASET_NOT_EDITABLE'; detail: string } };

const notEditable = (how: string): Outcome => ({
  refuse: { status: 400, code: 'DATASET_NOT_EDITABLE', detail: `The dataset can only be changed while DRAFT; ${how} it first` },
});
const invalid = (status: 409 | 422, detail: string): Outcome => ({ refuse: { status, code: 'INVALID_STATE', detail } });

export const LIFECYCLE: Record<LifecycleOperation, Record<DatasetStatus, Outcome>> = {
  update: {
    DRAFT: { to: 'DRAFT' },
    READY: notEditable('unstage'),
    AVAILABLE: notEditable('unrelease'),
  },
  stage: {
    DRAFT: { to: 'READY', validate: 'stage' },
    READY: invalid(422, 'Only a DRAFT dataset can be staged; it is READY already'),
    AVAILABLE: invalid(422, 'Only a DRAFT dataset can be staged; it is AVAILABLE (unrelease it first)'),
  },
  unstage: {
    DRAFT: invalid(409, 'Only a READY dataset can be unstaged; it is DRAFT'),
    READY: { to: 'DRAFT' },
    AVAILABLE: invalid(409, 'Only a READY dataset can be unstaged; it is AVAILABLE (unrelease it instead)'),
  },
  release: {
    DRAFT: { to: 'AVAILABLE', saga: 'RELEASE', validate: 'release' },
    READY: { to: 'AVAILABLE', saga: 'RELEASE', validate: 'release' },
    AVAILABLE: invalid(409, 'The dataset is released already'),
  },
  unrelease: {
    DRAFT: invalid(409, 'Only an AVAILABLE dataset can be unreleased; it is DRAFT'),
    READY: invalid(409, 'Only an AVAILABLE dataset can be unreleased; it is READY'),
    AVAILABLE: { to: 'DRAFT', saga: 'UNRELEASE' },
  },
  delete: {
    DRAFT: { to: 'DELETED', saga: 'DELETE' },
    READY: { to: 'DELETED', saga: 'DELETE' },
    AVAILABLE: invalid(409, 'An AVAILABLE dataset cannot be deleted; unrelease it first'),
  },
  readyMeta: {
    DRAFT: invalid(422, 'The READY metadata update needs a READY dataset; it is DRAFT (use PUT or PATCH)'),
    READY: { to: 'READY' },
    AVAILABLE: invalid(422, 'The READY metadata update needs a READY dataset; it is AVAILABLE (use the released metadata update)'),
  },
  releasedMeta: {
    DRAFT: invalid(409, 'The released metadata update needs a dataset that is not DRAFT (use PUT or PATCH)'),
    READY: { to: 'READY' },
    AVAILABLE: { to: 'AVAILABLE' },
  },
};

/** Which sagas under way block an operation: state changes wait for the saga; a deletion blocks everything but itself. */
const BLOCKED_BY: Record<SagaType, readonly LifecycleOperation[]> = {
  CREATE: ['stage', 'unstage', 'release', 'unrelease'],
  RELEASE: ['stage', 'unstage', 'release', 'unrelease', 'delete'],
  UNRELEASE: ['stage', 'unstage', 'release', 'unrelease', 'delete'],
  DELETE: ['update', 'stage', 'unstage', 'release', 'unrelease', 'readyMeta', 'releasedMeta'],
};

export interface Transition { to: DatasetStatus | 'DELETED'; saga?: SagaType; validate?: 'stage' | 'release' }

/** The transition an operation makes from the dataset's state, or the refusal the contract names (thrown). */
export function transition(operation: LifecycleOperation, dataset: { status: DatasetStatus; pendingSagaType: SagaType | null }): Transition {
  const pending = dataset.pendingSagaType;
  if (pending && BLOCKED_BY[pending].includes(operation)) {
    throw new AppError('SAGA_IN_FLIGHT', `A ${pending} operation of this dataset is still under way; retry when it has finished`, {
      extensions: { pendingSagaType: pending },
    });
  }
  const outcome = LIFECYCLE[operation][dataset.status];
  if ('refuse' in outcome) throw new AppError(outcome.refuse.code, outcome.refuse.detail, { status: outcome.refuse.status });
  return outcome;
}
