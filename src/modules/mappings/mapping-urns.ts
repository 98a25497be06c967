import { validationFailed } from '../../errors.js';

/**
 * Mapping URNs (the contract's scheme): logical `urn:platform:mapping:{dataSetId}:{name}`,
 * versioned `urn:platform:mapping:{dataSetId}:{name}:{version}` with version 1, 2, ... A name
 * never holds a colon, so the two forms cannot be confused.
 */
export const MAPPING_NAME_PATTERN = '^[A-Za-z0-9_-]+$';
const PREFIX = 'urn:platform:mapping:';
// Up to 9 digits: a version always fits the integer column.
const URN = /^urn:platform:mapping:([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):([A-Za-z0-9_-]{1,255})(?::([1-9][0-9]{0,8}))?$/;

export interface MappingUrn { datasetId: string; name: string; version: number | null }

export const logicalUrnOf = (datasetId: string, name: string) => `${PREFIX}${datasetId}:${name}`;
export const versionedUrnOf = (datasetId: string, name: string, version: number) => `${PREFIX}${datasetId}:${name}:${version}`;

export function parseMappingUrn(urn: string): MappingUrn | null {
  const match = URN.exec(urn);
  if (!match) return null;
  return { datasetId: match[1]!.toLowerCase(), name: match[2]!, version: match[3] ? Number(match[3]) : null };
}

/** Why `urn` cannot name a mapping of the dataset, or null when it can (whether that mapping exists is another question). */
export function mappingUrnProblem(datasetId: string, urn: string): string | null {
  const parsed = parseMappingUrn(urn);
  if (!parsed) return `is not a mapping URN (${PREFIX}{dataSetId}:{name}[:{version}])`;
  if (parsed.datasetId !== datasetId.toLowerCase()) return `names a mapping of another dataset (${parsed.datasetId})`;
  return null;
}

/** The URN parsed, when it names a mapping of this dataset; else 400 naming `field`. */
export function mappingUrnOf(datasetId: string, urn: string, field: string): MappingUrn {
  const problem = mappingUrnProblem(datasetId, urn);
  if (problem) throw validationFailed(field, problem);
  return parseMappingUrn(urn)!;
}
