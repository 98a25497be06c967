import type { Expr } from '../../../src/sta/query/ast.js';

/** An expression as a compact S-expression, so precedence tests read at a glance. */
export function render(expr: Expr): string {
  switch (expr.kind) {
    case 'literal':
      if (expr.type === 'string') return `'${expr.value}'`;
      if (expr.type === 'datetime') return `@${expr.value}`;
      if (expr.type === 'duration') return `duration:${expr.value}`;
      if (expr.type === 'interval') return `@${expr.value.start ?? expr.value.duration}/${expr.value.end ?? expr.value.duration}`;
      if (expr.type === 'geometry') return `${expr.value.type}${JSON.stringify(expr.value.coordinates)}`;
      return String(expr.value);
    case 'property': return expr.path.join('/');
    case 'binary': return `(${expr.op} ${render(expr.left)} ${render(expr.right)})`;
    case 'not': return `(not ${render(expr.operand)})`;
    case 'negate': return `(- ${render(expr.operand)})`;
    case 'call': return `${expr.name}(${expr.args.map(render).join(', ')})`;
  }
}
