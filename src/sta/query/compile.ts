// STUB: replaced by the sta-query branch.
import type { RawBuilder } from 'kysely';
import type { Expr, OrderItem, PropertyResolver } from './ast.js';

export function compileFilter(_expr: Expr, _resolver: PropertyResolver, _options: { postgis: boolean }): RawBuilder<boolean> {
  throw new Error('not yet');
}

export function compileOrderBy(_items: OrderItem[], _resolver: PropertyResolver): RawBuilder<unknown>[] {
  throw new Error('not yet');
}
