import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { REPOSITORY } from '../helpers/repository.js';

/**
 * The import rules of src/ (.dependency-cruiser.cjs): no circles, type-only imports included;
 * no import up a layer but the two listed there; modules reached through their index.ts; the
 * datasets aggregate importing none of its parts. No database: it reads the sources only.
 */

const root = REPOSITORY;

/** One line per broken rule: the rule, the edge and, for a circle, the whole way round. */
const describeViolation = (violation: IViolation) => {
  const edge = violation.cycle
    ? [violation.from, ...violation.cycle.map((step) => step.name)].join(' → ')
    : `${violation.from} → ${violation.to}`;
  return `${violation.rule.name}: ${edge}`;
};

describe('the import graph of src/', () => {
  it('keeps every rule of .dependency-cruiser.cjs', async () => {
    const options = await extractDepcruiseOptions(path.join(root, '.dependency-cruiser.cjs'));
    const tsConfigFile = path.join(root, 'tsconfig.json');
    // From the project root, wherever the runner was started.
    const { output } = await cruise(['src'], { ...options, baseDir: root, tsConfig: { fileName: tsConfigFile } }, {}, { tsConfig: extractTSConfig(tsConfigFile) });
    const result = output as ICruiseResult;

    // A cruise that resolved nothing would find no violation either: it must have seen the code.
    const local = result.modules.filter((module) => module.source.startsWith('src/'));
    assert.ok(local.length > 250, `only ${local.length} files of src/ were cruised`);
    assert.ok(local.some((module) => module.dependencies.some((dependency) => dependency.resolved.startsWith('src/') && dependency.dependencyTypes.includes('type-only'))),
      'no type-only import was seen: the cruise must count them (tsPreCompilationDeps)');

    const broken = result.summary.violations.map(describeViolation);
    assert.equal(broken.length, 0, `imports break the rules of .dependency-cruiser.cjs:\n  ${broken.join('\n  ')}`);
  });
});
