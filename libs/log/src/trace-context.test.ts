import { CommitHeader } from '@flotilla/events';
import { formatTraceparent, inSpan } from '@flotilla/tracing';
import { recordSpans } from '@flotilla/tracing/testing';
import { describe, expect, it } from 'vitest';
import { EMPTY_TAIL } from './stored-commit.js';
import { logFixture, newRef, userMessage } from './test-support/fixtures.js';

describe('trace context in commit headers', () => {
  it('a commit appended inside a span carries its traceparent; one appended outside, or with tracing off, none', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const header = async (ref: ReturnType<typeof newRef>): Promise<string | undefined> =>
      (await log.jsm.direct.getMessage(log.streamName, { last_by_subj: log.filter(ref) }))?.header.get(
        CommitHeader.Traceparent,
      ) || undefined;

    const off = newRef();
    await inSpan('ignored', {}, () => log.append(off, [userMessage(off, 'untraced')], { expected: EMPTY_TAIL }));
    expect(await header(off)).toBeUndefined();

    await using recorder = await recordSpans();
    const traced = newRef();
    await inSpan('request', {}, () => log.append(traced, [userMessage(traced, 'traced')], { expected: EMPTY_TAIL }));
    const [span] = recorder.spans();
    expect(await header(traced)).toBe(formatTraceparent(span!.spanContext()));

    const outside = newRef();
    await log.append(outside, [userMessage(outside, 'no span')], { expected: EMPTY_TAIL });
    expect(await header(outside)).toBeUndefined();
  });
});
