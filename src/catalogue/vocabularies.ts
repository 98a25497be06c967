import licence from './vocabularies/licence.json' with { type: 'json' };
import dataTheme from './vocabularies/data-theme.json' with { type: 'json' };
import frequency from './vocabularies/frequency.json' with { type: 'json' };
import language from './vocabularies/language.json' with { type: 'json' };
import hvdCategory from './vocabularies/hvd-category.json' with { type: 'json' };
import fileType from './vocabularies/file-type.json' with { type: 'json' };

/**
 * The EU Vocabularies' authority tables the catalogue names its values from (licences, data
 * themes, frequencies, languages, High-Value Dataset categories, file types), kept as published in
 * ./vocabularies/ (each file names its source and licence): the catalogue never fetches them at
 * run time, and a code not in its table is refused when the dataset is written.
 */

interface TableFile {
  scheme: string;
  concepts: ReadonlyArray<{ code: string; uri: string; label: string; broader?: string | null }>;
}

export interface Concept { code: string; uri: string; label: string }

export class Vocabulary {
  private readonly byCode: ReadonlyMap<string, Concept>;
  constructor(readonly scheme: string, concepts: TableFile['concepts']) {
    this.byCode = new Map(concepts.map((concept) => [concept.code, { code: concept.code, uri: concept.uri, label: concept.label }]));
  }

  has(code: string): boolean {
    return this.byCode.has(code);
  }

  /** The concept of a code that `has` accepted (the tables never shrink while the process runs). */
  concept(code: string): Concept {
    const concept = this.byCode.get(code);
    if (!concept) throw new Error(`${code} is not a code of ${this.scheme}`);
    return concept;
  }
}

const vocabulary = (file: TableFile) => new Vocabulary(file.scheme, file.concepts);

export const VOCABULARIES = {
  licence: vocabulary(licence),
  dataTheme: vocabulary(dataTheme),
  frequency: vocabulary(frequency),
  language: vocabulary(language),
  hvdCategory: vocabulary(hvdCategory),
  fileType: vocabulary(fileType),
} as const;
