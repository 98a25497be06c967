import type { ConnectorContext, ConnectorState, SourceBatch } from '../../src/ingest/types.js';

/**
 * A `ConnectorContext` without the runtime: `deliver` keeps each batch (and its position, which
 * `position()` then answers, as the runtime's commit would), `report` keeps each state.
 */
export interface RecordingContext {
  context: ConnectorContext;
  batches: SourceBatch[];
  states: ConnectorState[];
  /** Every record value delivered so far, in order. */
  values(): unknown[];
  /** Aborts the context's signal, as the runtime does when the pipeline stops. */
  abort(): void;
}

export function recordingContext(
  connectorType: 'SQL' | 'HTTP', configuration: Record<string, unknown>,
  options: { schedule?: string | null; position?: unknown } = {},
): RecordingContext {
  const batches: SourceBatch[] = [];
  const states: ConnectorState[] = [];
  const controller = new AbortController();
  let position = options.position;
  const context: ConnectorContext = {
    pipelineId: 'pipeline-under-test',
    dataSource: { id: 'source-under-test', name: 'Source under test', connectorType, configuration },
    schedule: options.schedule ?? null,
    signal: controller.signal,
    async deliver(batch) {
      batches.push(batch);
      if (batch.position !== undefined) position = batch.position;
    },
    async position() {
      return position;
    },
    report(state) {
      states.push(state);
    },
    log: { info() {}, warn() {}, error() {} },
  };
  return {
    context, batches, states,
    values: () => batches.flatMap((batch) => batch.records.map((record) => record.value)),
    abort: () => controller.abort(),
  };
}
