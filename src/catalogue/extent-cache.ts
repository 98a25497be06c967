import { LRUCache } from 'lru-cache';
import type { DataExtent } from './records.js';

/** What the data of one dataset's named APIs spans, and the collections its OWS APIs hold (per API slug). */
export interface DatasetData { extent: DataExtent; collectionsBySlug: ReadonlyMap<string, readonly string[]> }

/** Reads a dataset's data extent from its storage (wired in app.ts: the OWS and STA sides compute it). */
export type ReadDatasetData = (dataset: { id: string; storageSchema: string; apis: ReadonlyArray<{ slug: string; standard: 'OWS' | 'STA' }> }) => Promise<DatasetData>;

interface Entry { data: DatasetData; computedAt: number; changedAt: Date; key: string }

const NOTHING: DatasetData = { extent: { bbox: null, start: null, end: null }, collectionsBySlug: new Map() };

/**
 * Each dataset's data extent, computed at most every `refreshMs` (it costs an ST_Extent and a min/max
 * per collection): a catalogue page of 100 datasets asks for 100. `changedAt` is when the cache last
 * saw the extent change, so that the catalogue's Last-Modified follows the data too. A dataset whose
 * data cannot be read (storage gone, a geometry PostGIS refuses) has no extent, with a log line.
 */
export class ExtentCache {
  private readonly entries = new LRUCache<string, Entry>({ max: 50_000 });
  private readonly pending = new Map<string, Promise<Entry>>();

  constructor(private readonly read: ReadDatasetData, private readonly refreshMs: number, private readonly onError: (datasetId: string, error: unknown) => void) {}

  async of(dataset: Parameters<ReadDatasetData>[0]): Promise<DatasetData & { changedAt: Date | null }> {
    const key = JSON.stringify(dataset.apis);
    const cached = this.entries.get(dataset.id);
    if (cached && cached.key === key && Date.now() - cached.computedAt < this.refreshMs) return { ...cached.data, changedAt: cached.changedAt };
    let computing = this.pending.get(dataset.id);
    if (!computing) {
      computing = this.compute(dataset, key, cached).finally(() => this.pending.delete(dataset.id));
      this.pending.set(dataset.id, computing);
    }
    const entry = await computing;
    return { ...entry.data, changedAt: entry.changedAt };
  }

  private async compute(dataset: Parameters<ReadDatasetData>[0], key: string, previous: Entry | undefined): Promise<Entry> {
    let data = NOTHING;
    try {
      data = await this.read(dataset);
    } catch (error) {
      this.onError(dataset.id, error);
    }
    const same = previous !== undefined && JSON.stringify(serializable(previous.data)) === JSON.stringify(serializable(data));
    const entry = { data, computedAt: Date.now(), changedAt: same ? previous.changedAt : new Date(), key };
    this.entries.set(dataset.id, entry);
    return entry;
  }
}

const serializable = (data: DatasetData) => ({ extent: data.extent, collections: [...data.collectionsBySlug] });
