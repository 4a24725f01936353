// The contract suite: every example of every operation, sent to each target (the Prism mock and
// the real server) and checked against the generated 3.1 document.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { allOperationIds, loadCases } from './cases.js';
import { send, type Target } from './http.js';
import { contractViolations } from './validate.js';

const NOT_IMPLEMENTED = 'https://chatapp.example/problems/not-implemented';

export function contractSuite(api: string): void {
  const cases = loadCases(api);
  const targets = inject('contractTargets');
  const implemented = new Set(inject('implementedOperations')[api] ?? []);

  it(`every ${api} operation has a success and an error example`, () => {
    const covered = new Set(cases.map((c) => c.operationId));
    expect(allOperationIds(api).filter((id) => !covered.has(id))).toEqual([]);
    for (const id of covered) {
      const statuses = cases.filter((c) => c.operationId === id).map((c) => c.status ?? 200);
      expect(
        statuses.some((s) => s < 400),
        `${id} has a success example`,
      ).toBe(true);
      expect(
        statuses.some((s) => s >= 400),
        `${id} has an error example`,
      ).toBe(true);
    }
  });

  for (const { name, urls, credentials } of targets) {
    const target: Target = { name, baseUrl: (a) => urls[a], credentials };
    describe(`${api} against the ${name}`, () => {
      const notImplemented = new Set<string>();

      it.each(cases.map((c) => [`${c.operationId} / ${c.example} → ${c.status ?? '2xx'}`, c] as const))('%s', async (_title, c) => {
        const answer = await send(c, target);
        if (name === 'server' && answer.status === 501 && !implemented.has(c.operationId)) {
          expect(answer.contentType).toBe('application/problem+json');
          expect(answer.body).toMatchObject({ type: NOT_IMPLEMENTED, status: 501, operation_id: c.operationId });
          notImplemented.add(c.operationId);
          return;
        }
        if (name === 'mock') {
          // The mock serves exactly the example it is asked for.
          if (c.status) expect(answer.status, answer.text.slice(0, 500)).toBe(c.status);
          else expect(answer.status, answer.text.slice(0, 500)).toBeLessThan(400);
        } else {
          // The server answers from its own data (the example's ids may not exist there): any
          // declared answer is fine, never a server error. Round trips are in <api>/*.flow.test.ts.
          expect(answer.status, answer.text.slice(0, 500)).toBeLessThan(500);
        }
        expect(await contractViolations(api, c.operationId, answer)).toEqual([]);
        if (name === 'mock' && c.responseExample !== undefined && /json/.test(answer.contentType)) {
          expect(answer.body).toEqual(c.responseExample);
        }
      });

      if (name === 'server') {
        afterAll(() => {
          const total = new Set(cases.map((c) => c.operationId)).size;
          console.log(`contract ${api}: ${notImplemented.size} of ${total} operations not implemented on the server`);
        });
      }
    });
  }
}
