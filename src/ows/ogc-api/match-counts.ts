import { LRUCache } from 'lru-cache';

/**
 * `numberMatched` of items pages, kept a moment: counting every matching feature costs more than
 * reading a page of them (a count over 100,000 points is most of an unfiltered page's work), and a
 * client paging through asks the same count again and again. A count is used while no write of
 * this process touched the dataset's schema since (the feature store and the pipelines' writer say
 * so at commit) and for at most `ttlMs`, which bounds how long another process's writes go uncounted.
 */
export class MatchCounts {
  private readonly counts = new LRUCache<string, { count: number; at: number; generation: number }>({ max: 4096 });
  private readonly generations = new Map<string, number>();

  constructor(private readonly ttlMs: number) {}

  /** A write to the schema's features committed. */
  changed(schema: string): void {
    this.generations.set(schema, (this.generations.get(schema) ?? 0) + 1);
  }

  /** The count of `key` (a collection and its selection) in `schema`, counted again when stale. */
  async count(schema: string, key: string, counting: () => Promise<number>): Promise<number> {
    const generation = this.generations.get(schema) ?? 0;
    const cacheKey = `${schema} ${key}`;
    const known = this.counts.get(cacheKey);
    if (known && known.generation === generation && Date.now() - known.at < this.ttlMs) return known.count;
    const at = Date.now();
    const count = await counting();
    this.counts.set(cacheKey, { count, at, generation });
    return count;
  }
}
