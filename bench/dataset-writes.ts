import { median } from './load.js';

/**
 * The write side of datasets, measured over HTTP on the running program: how long a CREATE saga
 * takes from the 201 to `provisioned: true`, and how many creates one client gets through in a row.
 */

export interface DatasetWriteResult {
  sagas: number;
  sagaP50Ms: number;
  sagaP99Ms: number;
  sagaMaxMs: number;
  creates: number;
  createsPerSecond: number;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;

async function create(api: string, token: string, name: string): Promise<string> {
  const response = await fetch(`${api}/v1/datasets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, description: 'Benchmark dataset' }),
  });
  if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** Polls every 2 ms (cheap next to a saga) until the dataset reads `provisioned: true`. */
async function provisioned(api: string, token: string, id: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const response = await fetch(`${api}/v1/datasets/${id}`, { headers: { authorization: `Bearer ${token}` } });
    if (((await response.json()) as { provisioned: boolean }).provisioned) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`dataset ${id} was not provisioned within 30 s`);
}

export async function measureDatasetWrites(api: string, token: string, opts: { sagas: number; creates: number }): Promise<DatasetWriteResult> {
  const sagaMs: number[] = [];
  for (let i = 0; i < opts.sagas; i++) {
    const id = await create(api, token, `Saga timing ${i}`);
    const createdAt = performance.now();
    await provisioned(api, token, id);
    sagaMs.push(performance.now() - createdAt);
  }
  const startedAt = performance.now();
  for (let i = 0; i < opts.creates; i++) await create(api, token, `Created in a row ${i}`);
  const seconds = (performance.now() - startedAt) / 1000;
  return {
    sagas: opts.sagas,
    sagaP50Ms: median(sagaMs),
    sagaP99Ms: percentile(sagaMs, 99),
    sagaMaxMs: Math.max(...sagaMs),
    creates: opts.creates,
    createsPerSecond: opts.creates / seconds,
  };
}
