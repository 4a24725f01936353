// Database errors the contact handlers turn into problems.

/** Whether `error` is a unique violation (concurrent creates of the same name or number). */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
