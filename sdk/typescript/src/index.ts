// The OmniGraph TypeScript client: the functions and types generated from
// the server's OpenAPI document (./gen, one function per route, named by
// operation id), plus connect, a typed error and unwrap. Regenerate ./gen
// with scripts/sdk.sh generate; never edit it by hand.
import { createClient, createConfig } from './gen/client/index.js';
import type { Client } from './gen/client/index.js';
import type { ErrorOutput, OutcomeUnknown } from './gen/types.gen.js';

export * from './gen/index.js';
export type { Client } from './gen/client/index.js';

/** What connect needs: the server's base URL and, unless it runs in open mode, a bearer token. */
export interface ConnectOptions {
  baseUrl: string;
  token?: string;
  fetch?: typeof fetch;
  /**
   * headers, when set, is called before each request and its headers are
   * added to it: for instance the W3C `traceparent` of the caller's span
   * (with @opentelemetry/api: `() => { const h = {}; propagation.inject(context.active(), h); return h; }`),
   * which the server continues.
   */
  headers?: () => Record<string, string>;
}

/** connect makes a client of one server; pass it as `client` to every call. */
export function connect(opts: ConnectOptions): Client {
  const c = createClient(createConfig({ baseUrl: opts.baseUrl, auth: opts.token, fetch: opts.fetch }));
  const hook = opts.headers;
  if (hook) {
    c.interceptors.request.use((req) => {
      for (const [k, v] of Object.entries(hook())) {
        req.headers.set(k, v);
      }
      return req;
    });
  }
  return c;
}

/**
 * OmnigraphError is a failed call: a non-2xx answer, with the HTTP status
 * and the server's error envelope, or a request that never got one
 * (status 0: the server refused the connection, could not be resolved,
 * or the call was aborted), with the underlying error as `cause`.
 * outcomeUnknown is set when a write may have landed: check
 * outcomeUnknown.check before sending it again.
 */
export class OmnigraphError extends Error {
  /** The HTTP status, or 0 when no answer came. */
  readonly status: number;
  /** The server's error envelope (for status 0, one the client made: code `unreachable`). */
  readonly body: ErrorOutput;
  readonly retryAfterSeconds?: number;

  constructor(status: number, body: ErrorOutput, retryAfterSeconds?: number, options?: { cause?: unknown }) {
    super(body.error || `HTTP ${status}`, options);
    this.name = 'OmnigraphError';
    this.status = status;
    this.body = body;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** The envelope's coarse code (`bad_request`, `not_found`, `conflict`, …; `unreachable` for status 0). */
  get code(): string | undefined {
    return this.body.code;
  }

  /**
   * The envelope's precise reason (`query_type_error`, `graph_not_found`,
   * …), the one to branch on; for status 0, the system's code of the
   * cause (`ECONNREFUSED`, `ENOTFOUND`, `AbortError`) when it has one.
   */
  get reason(): string | undefined {
    return this.body.reason;
  }

  get outcomeUnknown(): OutcomeUnknown | undefined {
    return this.body.outcome_unknown;
  }
}

/** The result of a generated call (its default, non-throwing style). */
export interface CallResult<T> {
  data?: T;
  error?: unknown;
  request?: Request;
  response?: Response;
}

// causeCode is the system code of a failed fetch: undici puts it on the
// TypeError's cause (ECONNREFUSED, ENOTFOUND, ...); an abort is named.
function causeCode(err: unknown): string | undefined {
  const e = err as { name?: string; code?: string; cause?: { code?: string; errors?: Array<{ code?: string }> } } | undefined;
  if (!e || typeof e !== 'object') return undefined;
  if (e.name === 'AbortError' || e.name === 'TimeoutError') return e.name;
  return e.cause?.code ?? e.cause?.errors?.find((x) => x.code)?.code ?? e.code;
}

// unreachable is the error of a request that got no answer.
function unreachable(err: unknown, url?: string): OmnigraphError {
  const inner = err as { message?: string; cause?: { message?: string } } | undefined;
  const detail = inner?.cause?.message || inner?.message || String(err);
  const where = url ? new URL(url).origin : 'the server';
  return new OmnigraphError(0, {
    error: `cannot reach ${where}: ${detail}; check the base URL and that omnigraph serve is running`,
    code: 'unreachable',
    reason: causeCode(err),
  }, undefined, { cause: err });
}

/**
 * unwrap awaits a generated call and returns its data, or throws an
 * OmnigraphError carrying the status and the envelope (`reason`, `code`),
 * or, when no answer came, status 0 and the cause.
 */
export async function unwrap<T>(call: Promise<CallResult<T>>): Promise<T> {
  let res: CallResult<T>;
  try {
    res = await call;
  } catch (err) {
    // A client made with throwOnError rejects instead of returning.
    if (err instanceof OmnigraphError) throw err;
    throw unreachable(err);
  }
  if (!res.response) {
    throw unreachable(res.error, res.request?.url);
  }
  const status = res.response.status;
  if (res.error !== undefined || status < 200 || status > 299) {
    const body = (typeof res.error === 'object' && res.error !== null && 'error' in res.error ? res.error : { error: typeof res.error === 'string' && res.error ? res.error : `HTTP ${status}` }) as ErrorOutput;
    const ra = res.response.headers.get('Retry-After');
    throw new OmnigraphError(status, body, ra ? Number(ra) : undefined);
  }
  return res.data as T;
}
