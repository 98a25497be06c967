import { Type, type Static } from 'typebox';
import { DateTime, Uuid } from '../../http/schemas.js';
import { sharedListParameters } from '../../http/page.js';

export const DatasetParams = Type.Object({ dataSetId: Uuid });
export const StyleParams = Type.Object({ dataSetId: Uuid, id: Uuid });

export const Style = Type.Object({
  id: Uuid,
  dataSetId: Uuid,
  name: Type.String(),
  sldContent: Type.String(),
  inUse: Type.Boolean({ description: 'true while the dataset is AVAILABLE with an OWS named API: its map server serves the style (WMS STYLES=name)' }),
  createdAt: DateTime,
  modifiedAt: DateTime,
}, { title: 'Style' });
export type Style = Static<typeof Style>;

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_-]+$', description: 'unique within the dataset' }),
  sldContent: Type.String({ minLength: 1, maxLength: 512 * 1024, description: 'an SLD document: well-formed XML whose root element is StyledLayerDescriptor' }),
};

export const StyleInput = Type.Object({ name: fields.name, sldContent: fields.sldContent }, { additionalProperties: false, title: 'StyleInput' });
export type StyleInput = Static<typeof StyleInput>;

export const StylePatch = Type.Object({
  name: Type.Optional(fields.name),
  sldContent: Type.Optional(fields.sldContent),
}, { additionalProperties: false, title: 'StylePatch' });
export type StylePatch = Static<typeof StylePatch>;

export const StyleListQuery = Type.Object({
  ...sharedListParameters,
  name: Type.Optional(Type.String({ description: 'partial match' })),
});
export type StyleListQuery = Static<typeof StyleListQuery>;
