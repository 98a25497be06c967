import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { AppError } from '../../errors.js';

/**
 * The coordinate reference systems of OGC API – Features Part 2, as URIs: CRS84 (WGS 84 in
 * longitude/latitude, the default), EPSG:4326 (WGS 84 in latitude/longitude, the EPSG order),
 * EPSG:3857 and each collection's storage CRS. A CRS says which SRID PostGIS transforms to and
 * whether its first axis is the latitude (the coordinates are then swapped after the transform).
 */

export const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84';
const EPSG_URI = 'http://www.opengis.net/def/crs/EPSG/0/';
export const epsgUri = (srid: number) => `${EPSG_URI}${srid}`;

export interface Crs { uri: string; srid: number; latitudeFirst: boolean }

export const CRS84_CRS: Crs = { uri: CRS84, srid: 4326, latitudeFirst: false };

/**
 * Geographic CRSs (latitude first in EPSG's definition) among the SRIDs PostGIS knows, found once
 * per SRID: their srtext starts with GEOGCS. Projected ones are taken as easting first, which holds
 * for those we offer (3857, UTM, LV95); a storage CRS whose EPSG order is northing first (3035,
 * 31467) is served as PostGIS stores it, x/y.
 */
export class CrsRegistry {
  private readonly geographic = new Map<number, Promise<boolean>>();
  constructor(private readonly db: Database) {}

  private isGeographic(srid: number): Promise<boolean> {
    let known = this.geographic.get(srid);
    if (!known) {
      known = sql<{ geographic: boolean }>`select coalesce(srtext like 'GEOGCS%', false) as geographic from spatial_ref_sys where srid = ${srid}`
        .execute(this.db).then(({ rows }) => rows[0]?.geographic ?? false);
      known.catch(() => this.geographic.delete(srid));
      this.geographic.set(srid, known);
    }
    return known;
  }

  /** The CRSs a collection stored in `storageSrid` is served in: CRS84 first. */
  async offered(storageSrid: number): Promise<Crs[]> {
    const srids = [...new Set([4326, 3857, storageSrid])];
    return [CRS84_CRS, ...await Promise.all(srids.map(async (srid) => ({ uri: epsgUri(srid), srid, latitudeFirst: await this.isGeographic(srid) })))];
  }

  /** The storage CRS's URI: CRS84 for WGS 84, whose stored order is longitude first. */
  storageUri = (srid: number) => (srid === 4326 ? CRS84 : epsgUri(srid));

  /** The CRS a `crs`, `bbox-crs` or `filter-crs` value names, among those offered; 400 otherwise. */
  async choose(value: string | null, storageSrid: number, parameter: string): Promise<Crs> {
    if (value === null) return CRS84_CRS;
    const offered = await this.offered(storageSrid);
    // `[EPSG:4326]` (a safe CURIE) and the bare URI are both in use.
    const uri = /^\[EPSG:(\d+)\]$/.exec(value) ? epsgUri(Number(/\d+/.exec(value)![0])) : value;
    const crs = offered.find((candidate) => candidate.uri === uri);
    if (!crs) {
      const message = `must be one of ${offered.map((candidate) => candidate.uri).join(', ')}`;
      throw new AppError('VALIDATION_FAILED', `${parameter}: ${message}`, { fieldErrors: [{ field: parameter, message }] });
    }
    return crs;
  }
}
