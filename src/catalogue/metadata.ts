import type { FieldError } from '../errors.js';
import { VOCABULARIES, type Vocabulary } from './vocabularies.js';

/**
 * A dataset's metadata for the catalogue (its `catalogue` member): stored as a merge patch builds
 * it, each code checked against its EU table. A member left out, or null, is the catalogue's
 * default (`license`: CATALOGUE_DEFAULT_LICENSE, `contactEmail`: CATALOGUE_CONTACT_EMAIL) or none.
 */
export interface CatalogueMetadata {
  license: string | null;
  keywords: string[];
  themes: string[];
  contactEmail: string | null;
  accrualPeriodicity: string | null;
  hvdCategories: string[];
  landingPage: string | null;
}

/** What a client sends: every member optional, null clears it. */
export type CatalogueMetadataPatch = { [K in keyof CatalogueMetadata]?: CatalogueMetadata[K] | null };

export const EMPTY_CATALOGUE_METADATA: CatalogueMetadata = {
  license: null, keywords: [], themes: [], contactEmail: null, accrualPeriodicity: null, hvdCategories: [], landingPage: null,
};

const LISTS = new Set<keyof CatalogueMetadata>(['keywords', 'themes', 'hvdCategories']);

/** The stored metadata, whatever an older row or a partial object holds: every member present. */
export function catalogueMetadataOf(stored: unknown): CatalogueMetadata {
  const value = (stored && typeof stored === 'object' ? stored : {}) as Partial<CatalogueMetadata>;
  return {
    license: value.license ?? null,
    keywords: value.keywords ?? [],
    themes: value.themes ?? [],
    contactEmail: value.contactEmail ?? null,
    accrualPeriodicity: value.accrualPeriodicity ?? null,
    hvdCategories: value.hvdCategories ?? [],
    landingPage: value.landingPage ?? null,
  };
}

/** RFC 7396 on the metadata object: a member given replaces the stored one, null clears it, the rest stays. */
export function mergeCatalogueMetadata(current: CatalogueMetadata, patch: CatalogueMetadataPatch): CatalogueMetadata {
  const merged: Record<string, unknown> = { ...current };
  for (const [name, value] of Object.entries(patch) as Array<[keyof CatalogueMetadata, unknown]>) {
    if (value === undefined) continue;
    merged[name] = value === null ? (LISTS.has(name) ? [] : null) : Array.isArray(value) ? [...new Set(value)] : value;
  }
  return merged as unknown as CatalogueMetadata;
}

/** Each code that its EU table does not hold, named as `catalogue.themes[1]`. */
export function catalogueMetadataProblems(patch: CatalogueMetadataPatch): FieldError[] {
  const problems: FieldError[] = [];
  const check = (field: string, code: string, table: Vocabulary, what: string) => {
    if (!table.has(code)) problems.push({ field: `catalogue.${field}`, message: `is not ${what} of the EU table ${table.scheme}` });
  };
  if (patch.license) check('license', patch.license, VOCABULARIES.licence, 'a licence');
  patch.themes?.forEach((code, i) => check(`themes[${i}]`, code, VOCABULARIES.dataTheme, 'a data theme'));
  if (patch.accrualPeriodicity) check('accrualPeriodicity', patch.accrualPeriodicity, VOCABULARIES.frequency, 'a frequency');
  patch.hvdCategories?.forEach((code, i) => check(`hvdCategories[${i}]`, code, VOCABULARIES.hvdCategory, 'a High-Value Dataset category'));
  return problems;
}
