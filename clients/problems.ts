// Typed errors for answers that are not 2xx: RFC 9457 problems (every API error but OAuth's)
// and RFC 6749 §5.2 OAuth errors (the token and revocation endpoints), plus `unwrap` to turn an
// openapi-fetch result into its data or a thrown error.
import type { components } from '../generated/connect/types.js';

export type ProblemDetails = components['schemas']['ProblemDetails'];
export type ProblemType = components['schemas']['ProblemType'];
export type InvalidParam = components['schemas']['InvalidParam'];
export type OAuthErrorBody = components['schemas']['OAuthError'];

/** The short name of a problem type: `not-found` for `https://chatapp.example/problems/not-found`. */
export type ProblemName = ProblemType extends `${string}/problems/${infer Name}` ? Name : never;

const PROBLEM_BASE = 'https://chatapp.example/problems/';

/** Any non-2xx answer; `body` is what the server sent (parsed JSON when it was JSON). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
    readonly response?: Response,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** An `application/problem+json` answer, its fields as the spec's ProblemDetails declares them. */
export class ProblemError extends ApiError implements ProblemDetails {
  readonly type: ProblemType;
  readonly title: string;
  readonly detail?: string;
  readonly instance?: string;
  readonly request_id?: string;
  readonly errors?: InvalidParam[];
  readonly required_scope?: string;
  readonly upgrade_url?: string;
  readonly provider_code?: number;
  readonly operation_id?: string;

  constructor(problem: ProblemDetails, response?: Response) {
    super(`${problem.status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`, problem.status, problem, response);
    this.name = 'ProblemError';
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail;
    this.instance = problem.instance;
    this.request_id = problem.request_id;
    this.errors = problem.errors;
    this.required_scope = problem.required_scope;
    this.upgrade_url = problem.upgrade_url;
    this.provider_code = problem.provider_code;
    this.operation_id = problem.operation_id;
  }

  /** The short name of the type (`not-found`), to branch on. */
  get problem(): string {
    return this.type.startsWith(PROBLEM_BASE) ? this.type.slice(PROBLEM_BASE.length) : this.type;
  }
}

/** An OAuth error of the token or revocation endpoint (`invalid_grant`, `invalid_client`, ...). */
export class OAuthError extends ApiError {
  readonly error: OAuthErrorBody['error'] | string;
  readonly error_description?: string;

  constructor(body: { error: string; error_description?: string }, status: number, response?: Response) {
    super(`${body.error}${body.error_description ? `: ${body.error_description}` : ''}`, status, body, response);
    this.name = 'OAuthError';
    this.error = body.error;
    this.error_description = body.error_description;
  }
}

function isProblemBody(body: unknown): body is ProblemDetails {
  const b = body as Partial<ProblemDetails> | null;
  return typeof b === 'object' && b !== null && typeof b.type === 'string' && typeof b.title === 'string' && typeof b.status === 'number';
}

/** The error for a non-2xx answer's body. */
export function toError(body: unknown, response: Response): ApiError {
  if (isProblemBody(body)) return new ProblemError(body, response);
  const oauth = body as { error?: unknown; error_description?: unknown } | null;
  if (typeof oauth === 'object' && oauth !== null && typeof oauth.error === 'string') {
    return new OAuthError(
      { error: oauth.error, error_description: typeof oauth.error_description === 'string' ? oauth.error_description : undefined },
      response.status,
      response,
    );
  }
  return new ApiError(`HTTP ${response.status}`, response.status, body, response);
}

/** The data of a 2xx result, or the answer's error thrown (ProblemError, OAuthError or ApiError). */
export function unwrap<D>(result: { data?: D; error?: unknown; response: Response }): D {
  if (result.response.ok) return result.data as D;
  throw toError(result.error, result.response);
}

/** Whether `err` is a ProblemError, of `type` if given (the full URI or its short name, `not-found`). */
export function isProblem(err: unknown, type?: ProblemType | ProblemName): err is ProblemError {
  if (!(err instanceof ProblemError)) return false;
  return type === undefined || err.type === type || err.problem === type;
}
