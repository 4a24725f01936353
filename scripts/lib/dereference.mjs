// The published "dereferenced" variant of a document (as github/rest-api-description ships one):
// every local `$ref` replaced by what it points to, for tools that cannot follow references.
// A reference that would recurse into itself (a schema that contains itself) cannot be inlined:
// it stays a `$ref`, and components stay in the document so it still resolves.
// A walk over the parsed document with a memo takes milliseconds where
// @apidevtools/json-schema-ref-parser takes seconds on messaging, and `npm run generate` is timed.

/**
 * Returns a copy of `doc` with its local references inlined (shared, not cloned: serialise it).
 * @param {any} doc
 * @returns {{ doc: any, recursive: string[] }} the copy and the references left in place
 */
export function dereference(doc) {
  const done = new Map();
  const recursive = new Set();
  const active = new Set();

  const target = (ref) => {
    if (!ref.startsWith('#/')) throw new Error(`only local references can be inlined, not ${ref}`);
    const node = ref
      .slice(2)
      .split('/')
      .map((k) => decodeURIComponent(k).replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((n, k) => (n && typeof n === 'object' ? n[k] : undefined), doc);
    if (node === undefined) throw new Error(`dangling reference ${ref}`);
    return node;
  };

  const resolveRef = (ref) => {
    if (done.has(ref)) return done.get(ref);
    if (active.has(ref)) {
      recursive.add(ref);
      return null;
    }
    active.add(ref);
    const value = walk(target(ref));
    active.delete(ref);
    // A value that met its own reference on the way is not memoised: what it inlined under
    // that ancestor depends on the path it was reached by.
    if (!recursive.has(ref)) done.set(ref, value);
    return value;
  };

  const walk = (node) => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    if (typeof node.$ref === 'string') {
      const resolved = resolveRef(node.$ref);
      const { $ref, ...siblings } = node;
      if (resolved === null) return node;
      // 3.1 allows keywords beside $ref (a description, a default): they apply on top.
      if (!Object.keys(siblings).length) return resolved;
      return { ...resolved, ...walkEntries(siblings) };
    }
    return walkEntries(node);
  };
  const walkEntries = (node) => Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v)]));

  return { doc: walk(doc), recursive: [...recursive].sort() };
}

/** Every `$ref` value still in a document (after dereference: the recursive ones only). */
export function remainingRefs(node, found = new Set()) {
  if (Array.isArray(node)) node.forEach((n) => remainingRefs(n, found));
  else if (node && typeof node === 'object') {
    if (typeof node.$ref === 'string') found.add(node.$ref);
    Object.values(node).forEach((n) => remainingRefs(n, found));
  }
  return found;
}
