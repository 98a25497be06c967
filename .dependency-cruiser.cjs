/**
 * The import rules of src/, checked by test/architecture/import-graph.test.ts (and by
 * `npx depcruise src` for a look at the graph). Type-only imports count as much as any other:
 * a circle through types still means one module cannot be read without the other.
 *
 * The layers, lowest first. A file may import its own layer and the layers below it, never one
 * above:
 * - foundation: errors, configuration, logger, util/ (no imports of ours);
 * - db: the client, the schema type, migrations, SQL helpers that know no HTTP or access rules;
 * - access: permissions, scopes, callers, the tenant's bootstrap, authorization in SQL;
 * - plumbing: http/ (Fastify plumbing, schemas, paging envelope), jobs/ (sagas), metrics/;
 * - ingest: pipelines at run time, through the small interfaces it declares (writers, catalog);
 * - payload: the SensorThings server (sta/) and the OWS side (ows/), which implement ingest's writers,
 *   and the open-data catalogue (catalogue/: its EU vocabularies, the DCAT-AP records);
 * - listeners: the data API gateway with its MQTT broker (data-api/), the development IdP (idp/);
 * - context: the AppContext type the modules receive (extends data-api's GatewayContext);
 * - modules: the management API's resources (modules/<name>/), each reached through its index.ts;
 * - composition: app.ts, worker.app.ts, runtime.ts, server.ts, which build and wire all the above.
 */
const LAYERS = [
  { name: 'foundation', path: '^src/(util/|errors\\.ts$|config\\.ts$|logger\\.ts$)' },
  { name: 'db', path: '^src/db/' },
  { name: 'access', path: '^src/access/' },
  { name: 'plumbing', path: '^src/(http|jobs|metrics)/' },
  { name: 'ingest', path: '^src/ingest/' },
  { name: 'payload', path: '^src/(sta|ows|catalogue)/' },
  { name: 'listeners', path: '^src/(data-api|idp)/' },
  { name: 'context', path: '^src/context\\.ts$' },
  { name: 'modules', path: '^src/modules/' },
  { name: 'composition', path: '^src/(app|worker\\.app|runtime|server)\\.ts$' },
];

/**
 * The only imports allowed to run up a layer (file to file), each with its reason. Adding one needs
 * the same: a reason a reader accepts, in one line, here and in the README's architecture notes.
 */
const ALLOWED_UPWARD = [
  // Migrations 0019, 0020 and 0025 bring each provisioned dataset's SensorThings tables up to date through
  // sta/'s one definition of those tables (provisionStorage, idempotent) rather than a frozen copy of its DDL.
  { from: 'src/db/migrations/0019_sta_multi_datastreams.ts', to: 'src/sta/storage.ts' },
  { from: 'src/db/migrations/0020_sta_stored_stream_properties.ts', to: 'src/sta/storage.ts' },
  { from: 'src/db/migrations/0025_sta_stream_bounds_at_commit.ts', to: 'src/sta/storage.ts' },
];

/** The regular expression that matches exactly this path. */
const exactly = (file) => `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

const above = (index) => LAYERS.slice(index + 1).map((layer) => layer.path);

/** One rule per layer: nothing in it imports a layer above; each allowed file gets a rule of its own. */
const layerRules = LAYERS.slice(0, -1).flatMap((layer, index) => {
  const exceptions = ALLOWED_UPWARD.filter((allowed) => new RegExp(layer.path).test(allowed.from));
  return [
    {
      name: `layer-${layer.name}`,
      comment: `${layer.name} imports only its own layer and those below it, never ${LAYERS.slice(index + 1).map((l) => l.name).join(', ')}`,
      severity: 'error',
      from: { path: layer.path, pathNot: exceptions.map((allowed) => exactly(allowed.from)) },
      to: { path: above(index) },
    },
    ...exceptions.map((allowed, n) => ({
      name: `layer-${layer.name}-allowed-${n + 1}`,
      comment: `${allowed.from} may import ${allowed.to} (ALLOWED_UPWARD), and nothing else above ${layer.name}`,
      severity: 'error',
      from: { path: exactly(allowed.from) },
      to: { path: above(index), pathNot: exactly(allowed.to) },
    })),
  ];
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module may reach itself through its imports (type-only imports included).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves to a file: an import the cruise cannot follow would hide its edges from the rules.',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
    {
      name: 'in-a-layer',
      comment: 'Every file of src/ lies in one of the layers (add a new folder to LAYERS).',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.map((layer) => layer.path) },
      to: {},
    },
    ...layerRules,
    {
      name: 'modules-through-their-public-face',
      comment: "Another module is reached through its index.ts only, never through its repo, service or schemas (modules/<name>/index.ts lists what it offers).",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'composition-through-public-faces',
      comment: 'app.ts, runtime.ts and server.ts take what they wire from each module\'s index.ts too.',
      severity: 'error',
      from: { path: LAYERS[LAYERS.length - 1].path },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'datasets-is-the-aggregate',
      comment: "A dataset's parts depend on datasets, never the reverse: they register their checks and saga steps with it (wired in app.ts and runtime.ts).",
      severity: 'error',
      from: { path: '^src/modules/datasets/' },
      to: { path: '^src/modules/(styles|mappings|pipelines|datasources|datastructures)/' },
    },
  ],
  options: {
    // Type-only imports are dependencies too (TypeScript erases them, the reader does not).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Packages are dependencies of a file like any other, but their own imports are not ours to judge.
    doNotFollow: { path: 'node_modules' },
    // Packages that publish only an `exports` map (typebox, aedes) resolve as Node resolves them.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
