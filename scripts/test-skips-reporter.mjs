// A node:test reporter that writes one JSON line per skipped test or suite (name, file, reason).
// scripts/test.mjs adds it beside the TAP reporter: node's own "# skipped N" counts skipped tests
// only, while a suite skipped as a whole (`describe(..., { skip })`) counts as nothing there.
export default async function* skipsReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' || !event.data.skip) continue;
    const { name, file, skip, nesting, details } = event.data;
    yield `${JSON.stringify({ name, file: file ?? null, reason: skip === true ? '' : String(skip), nesting, suite: details?.type === 'suite' })}\n`;
  }
}
