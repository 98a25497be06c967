// A node:test reporter that writes one JSON line per test file: how long its top-level tests and
// suites took together (the file's own work; its process start is not in it). scripts/test.mjs adds
// it beside the TAP reporter, orders the next runs longest first from what it measured, and with
// --update-durations stores the figures in test/durations.json.
export default async function* durationsReporter(source) {
  const byFile = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue;
    byFile.set(event.data.file, (byFile.get(event.data.file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  for (const [file, ms] of byFile) yield `${JSON.stringify({ file, ms: Math.round(ms) })}\n`;
}
