// A file's declared Content-Type that says nothing about its bytes: none, a generic binary type,
// or `*/*` (the file part's `encoding.contentType` in the documents, which clients built from
// them send as is). Connect's documents and Messaging's media both type such a file by its bytes
// alone; any other declared type must agree with them.
const GENERIC = new Set(['', '*/*', 'application/octet-stream', 'binary/octet-stream', 'application/x-download']);

/** Whether a declared type (lower case, without parameters) says nothing about the content. */
export const saysNothing = (declared: string): boolean => GENERIC.has(declared);
