// The values filled into a pack: which are used, which are missing, which are refused.
import { HttpProblem } from '#server/lib/problems.js';
import type { PackData } from './catalog.js';

export function unknownPack(slug: string, pointer?: string): HttpProblem {
  return new HttpProblem(404, 'not-found', `No industry pack '${slug}'.`, pointer ? { errors: [{ pointer, detail: 'unknown industry pack' }] } : {});
}

/** A value holding a placeholder would become one once inserted (and be expanded later). */
export function placeholderProblem(pointers: string[]): HttpProblem {
  return new HttpProblem(400, 'validation', 'Values cannot hold {{ or }}: they would become placeholders.', {
    errors: pointers.map((pointer) => ({ pointer, detail: 'must not contain {{ or }}' })),
  });
}

export const holdsPlaceholder = (value: string) => value.includes('{{') || value.includes('}}');

/** The values a pack uses: given ones, defaults of optional ones; required ones missing are listed. */
export function packValues(pack: PackData, given: Record<string, string>): { values: Record<string, string>; missing: string[] } {
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const v of pack.variables) {
    if (Object.hasOwn(given, v.name)) values[v.name] = given[v.name];
    else if (v.required) missing.push(v.name);
    else values[v.name] = v.default ?? '';
  }
  return { values, missing };
}
