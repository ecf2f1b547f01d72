/**
 * One ask of the upstreams, admitted attempt by attempt: each answer the client gets is admitted
 * here, by the reader that asked (the upstream client never calls back into the cache); an
 * admission that is a failure (a malformed body, an answer about another resource) rejects that answer, which counts against its upstream, and
 * the same ask goes on to the next upstream within the client's retry budget (client.ts).
 */
import type { UpstreamAsk, UpstreamClient, UpstreamResponse } from '../upstream/client.js';
import type { UpstreamError } from '../upstream/errors.js';

/** Anything an answer can be admitted as, failures included (Admission, ListAdmission). */
type AnyAdmission = { kind: 'failure'; error: UpstreamError } | { kind: Exclude<string, 'failure'> };

/** The answer that ended the attempts, and its admission (absent for a 5xx or a 304: not admitted). */
export interface Admitted<A> {
  response: UpstreamResponse;
  admission?: A;
}

const isFailure = (admission: AnyAdmission): admission is { kind: 'failure'; error: UpstreamError } => admission.kind === 'failure';

/**
 * `admit` is asked about every answer but a 5xx (the last resort when every attempt failed,
 * passed on or replaced by a stale copy) and a 304 (which confirms the entry the reader holds):
 * those are the reader's to handle. Throws the client's failure when no attempt answered.
 */
export async function askAndAdmit<A extends AnyAdmission>(
  upstream: UpstreamClient,
  ask: UpstreamAsk,
  label: string,
  admit: (answer: UpstreamResponse) => A | Promise<A>,
): Promise<Admitted<A>> {
  for await (const attempt of upstream.attempts(ask, label)) {
    const { response } = attempt;
    if (response.status >= 500 || response.status === 304) return { response };
    const admission = await admit(response);
    if (isFailure(admission)) {
      attempt.reject(admission.error);
      continue;
    }
    return { response, admission };
  }
  // The client throws when its attempts end without an answer that stands: not reached.
  throw new Error(`no answer for ${ask.method} ${ask.path}`);
}
