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
}

/** connect makes a client of one server; pass it as `client` to every call. */
export function connect(opts: ConnectOptions): Client {
  return createClient(createConfig({ baseUrl: opts.baseUrl, auth: opts.token, fetch: opts.fetch }));
}

/**
 * OmnigraphError is a non-2xx answer: the HTTP status and the server's
 * error envelope. outcomeUnknown is set when a write may have landed:
 * check outcomeUnknown.check before sending it again.
 */
export class OmnigraphError extends Error {
  readonly status: number;
  readonly body: ErrorOutput;
  readonly retryAfterSeconds?: number;

  constructor(status: number, body: ErrorOutput, retryAfterSeconds?: number) {
    super(body.error || `HTTP ${status}`);
    this.name = 'OmnigraphError';
    this.status = status;
    this.body = body;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  get code(): string | undefined {
    return this.body.code;
  }

  get outcomeUnknown(): OutcomeUnknown | undefined {
    return this.body.outcome_unknown;
  }
}

/** The result of a generated call (its default, non-throwing style). */
export interface CallResult<T> {
  data?: T;
  error?: unknown;
  response?: Response;
}

/**
 * unwrap awaits a generated call and returns its data, or throws an
 * OmnigraphError carrying the status and the envelope.
 */
export async function unwrap<T>(call: Promise<CallResult<T>>): Promise<T> {
  const res = await call;
  const status = res.response?.status ?? 0;
  if (res.error !== undefined || status < 200 || status > 299) {
    const body = (typeof res.error === 'object' && res.error !== null ? res.error : { error: String(res.error ?? `HTTP ${status}`) }) as ErrorOutput;
    const ra = res.response?.headers.get('Retry-After');
    throw new OmnigraphError(status, body, ra ? Number(ra) : undefined);
  }
  return res.data as T;
}
