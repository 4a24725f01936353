// The generated contract as the server reads it: each document read and parsed once per process
// and shared by every app built in it (tests build many). The parsed documents are shared, so
// no caller may change one: copy what you need to change.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const API_NAMES = ['account', 'connect', 'login', 'messaging'] as const;
export type ApiName = (typeof API_NAMES)[number];
export type DocumentVersion = '3.0' | '3.1';

const generated = new URL('../generated/', import.meta.url);

export function documentPath(api: ApiName, version: DocumentVersion): URL {
  return new URL(`${api}/openapi.${version}.yaml`, generated);
}

const texts = new Map<string, string>();
const documents = new Map<string, any>();

/** The document's YAML as published (`/openapi/<api>.<version>.yaml`). */
export function documentText(api: ApiName, version: DocumentVersion): string {
  const key = `${api}/${version}`;
  let text = texts.get(key);
  if (text === undefined) texts.set(key, (text = readFileSync(documentPath(api, version), 'utf8')));
  return text;
}

/** The parsed document; shared, so never changed by its readers. */
export function contractDocument(api: ApiName, version: DocumentVersion = '3.1'): any {
  const key = `${api}/${version}`;
  let doc = documents.get(key);
  if (doc === undefined) documents.set(key, (doc = parse(documentText(api, version))));
  return doc;
}
