// Every relative link of the README and the guides resolves: to a file of the repository, and, when
// it names an anchor, to a heading of that file as GitHub anchors it. No network, no database.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkLinks, headingsOf, linksOf, markdownFilesUnder, type Problem } from './markdown-links.js';
import { REPOSITORY } from '../helpers/repository.js';

const ROOT = REPOSITORY;

/** The Markdown a reader of the repository follows links in. */
const FILES = [
  path.join(ROOT, 'README.md'),
  ...markdownFilesUnder(path.join(ROOT, 'docs')),
  path.join(ROOT, 'bench', 'README.md'),
  ...markdownFilesUnder(path.join(ROOT, 'deploy')),
];

const described = (problems: Problem[]) => problems.map((p) => `${p.file}:${p.line}: (${p.destination}) ${p.reason}`).join('\n');

describe('links in the documentation', () => {
  test('the guides are there: the README links every page of docs/', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const linked = new Set(linksOf(readme).map((link) => link.destination.split('#')[0]));
    const pages = markdownFilesUnder(path.join(ROOT, 'docs')).map((file) => path.relative(ROOT, file));
    assert.ok(pages.length > 0, 'docs/ holds no Markdown');
    assert.deepEqual(pages.filter((page) => !linked.has(page)), [], 'docs pages the README does not link');
  });

  for (const file of FILES) {
    test(`${path.relative(ROOT, file)}: every relative link resolves`, () => {
      assert.ok(fs.existsSync(file), `${path.relative(ROOT, file)} is missing`);
      const problems = checkLinks(file, ROOT);
      assert.equal(problems.length, 0, `broken links:\n${described(problems)}`);
    });
  }
});

describe('the link checker itself', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'links-check-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };

  test('anchors as GitHub makes them: punctuation dropped, code kept, repeats numbered', () => {
    const anchors = headingsOf([
      '# City data platform: management API',
      '## OWS named APIs: feature collections, WFS and WMS',
      '### Latest figures',
      '### Latest figures',
      '## MQTT fan-out across replicas (`npm run bench:mqtt-fanout`)',
      '## What moved on 2026-11-26 (20:18 run): V8\'s young generation',
      '## Speed limits: `npm run bench`',
      '## `DATA_API_URL` and **bold** and [a link](x.md) ##',
      '## Größe ½ – ünd café',
      '```sh',
      '# not a heading: inside a fence',
      '```',
      'Setext heading',
      '--------------',
      '### Latest figures',
    ].join('\n')).map((heading) => heading.anchor);
    assert.deepEqual(anchors, [
      'city-data-platform-management-api',
      'ows-named-apis-feature-collections-wfs-and-wms',
      'latest-figures',
      'latest-figures-1',
      'mqtt-fan-out-across-replicas-npm-run-benchmqtt-fanout',
      'what-moved-on-2026-11-26-2018-run-v8s-young-generation',
      'speed-limits-npm-run-bench',
      'data_api_url-and-bold-and-a-link',
      'größe---ünd-café',
      'setext-heading',
      'latest-figures-2',
    ]);
  });

  test('links: across lines, with titles and angle brackets, images and definitions; none from code', () => {
    const destinations = linksOf([
      'See [the limits of the data API,',
      '  MQTT](security-limits.md#mqtt) and ![a map](img/map.png "the map").',
      '[spaced](<a file.md>) and [nested [brackets]](b.md) and [parens](c_(d).md).',
      '`[not](code.md)` and ``[nor](this.md)``',
      '```sh',
      'curl "[x](fenced.md)"',
      '```',
      '~~~',
      '[also](tilde-fenced.md)',
      '~~~',
      '[ref]: defined.md#part',
    ].join('\n')).map((link) => link.destination);
    assert.deepEqual(destinations.sort(), ['a file.md', 'b.md', 'c_(d).md', 'defined.md#part', 'img/map.png', 'security-limits.md#mqtt'].sort());
  });

  test('a link to a missing file, a missing anchor, or a repeated heading counted wrong fails; good ones pass', () => {
    write('guide/target.md', '# Target\n\n## Latest figures\n\n## Latest figures\n\n## Answers to writes\n');
    write('guide/code.ts', 'export {};\n');
    const file = write('guide/page.md', [
      '# Page',
      '',
      '[fine](target.md#answers-to-writes), [second](target.md#latest-figures-1), [whole](target.md),',
      '[here](#page), [up](../guide/target.md#target), [a line](code.ts#L1), [folder](./), [web](https://example.org/x#y)',
      '',
      '[gone](missing.md), [no heading](target.md#answers-to-reads), [third](target.md#latest-figures-2),',
      '[not here](#nowhere), [anchor in code](code.ts#top)',
    ].join('\n'));
    const problems = checkLinks(file, dir);
    assert.deepEqual(problems.map((p) => [p.line, p.destination]), [
      [6, 'missing.md'],
      [6, 'target.md#answers-to-reads'],
      [6, 'target.md#latest-figures-2'],
      [7, '#nowhere'],
      [7, 'code.ts#top'],
    ], described(problems));
  });
});
