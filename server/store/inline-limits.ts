// LIMIT as a literal. Kysely sends `.limit(n)` as a parameter (`limit $4`), and PostgreSQL then
// plans a generic plan for an unknown row count: a page of 21 is costed like a tenth of the table,
// the generic plan costs more than the plans made with the values, and so the plan cache plans
// every run again (plan_cache_mode auto). On PGlite each planning also asks the size of every
// table and index it looks at (an lseek and an fstat each in the WebAssembly file system: 31
// per contacts page). A LIMIT that is a safe integer (our page sizes, validated by the contract,
// and constants) is written into the text instead, so a page of the same size reuses one
// generic plan. Anything else is left a parameter.
//
// Done while compiling, which visits every node anyway: as a plugin it was a second pass that
// copied every query's whole tree, a tenth of the database layer's CPU on a simple request.
import { PostgresQueryCompiler, ValueNode, type LimitNode } from 'kysely';

export class InlineLimitsCompiler extends PostgresQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    const { limit } = node;
    if (ValueNode.is(limit) && !limit.immediate && Number.isSafeInteger(limit.value) && (limit.value as number) >= 0) {
      this.append(`limit ${limit.value as number}`);
      return;
    }
    super.visitLimit(node);
  }
}
