// What a SendMessage asks, read from its params as the SDK's v1.0 transport decodes them.
import { SendMessageRequest } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { readSendRequest } from './a2a-send-request.js';

const request = (message: Record<string, unknown>, rest: Record<string, unknown> = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }], ...message },
    ...rest,
  });

const failure = (read: () => unknown): unknown => {
  try {
    read();
  } catch (error) {
    return error;
  }
  throw new Error('no error');
};

describe('readSendRequest', () => {
  it('reads a new task: its text (parts joined), no task, blocking, all history', () => {
    expect(readSendRequest(request({ parts: [{ text: 'one' }, { text: 'two' }] }))).toEqual({
      text: 'one\ntwo',
      taskId: undefined,
      template: undefined,
      historyLength: 100,
      returnImmediately: false,
    });
  });

  it('goes on with the task its taskId or contextId names; both must agree', () => {
    expect(readSendRequest(request({ taskId: 'conv-1' })).taskId).toBe('conv-1');
    expect(readSendRequest(request({ contextId: 'conv-1' })).taskId).toBe('conv-1');
    expect(readSendRequest(request({ taskId: 'conv-1', contextId: 'conv-1' })).taskId).toBe('conv-1');
    expect(failure(() => readSendRequest(request({ taskId: 'conv-1', contextId: 'conv-2' })))).toBeInstanceOf(
      RequestMalformedError,
    );
    // no conversation can have this id
    expect(failure(() => readSendRequest(request({ taskId: '../etc' })))).toBeInstanceOf(TaskNotFoundError);
  });

  it("takes the template from the request's metadata, else the message's", () => {
    expect(readSendRequest(request({ metadata: { template: 'careful' } })).template).toBe('careful');
    expect(
      readSendRequest(request({ metadata: { template: 'careful' } }, { metadata: { template: 'quick' } })).template,
    ).toBe('quick');
    expect(failure(() => readSendRequest(request({}, { metadata: { template: 'no spaces allowed' } })))).toBeInstanceOf(
      RequestMalformedError,
    );
  });

  it('bounds the history and reads returnImmediately', () => {
    const read = readSendRequest(request({}, { configuration: { historyLength: 5000, returnImmediately: true } }));
    expect(read).toMatchObject({ historyLength: 100, returnImmediately: true });
    expect(readSendRequest(request({}, { configuration: { historyLength: 0 } })).historyLength).toBe(0);
  });

  it("refuses what is not a user's text: another role, no parts, blank text, a file", () => {
    expect(failure(() => readSendRequest(request({ role: 'ROLE_AGENT' })))).toBeInstanceOf(RequestMalformedError);
    expect(failure(() => readSendRequest(request({ parts: [] })))).toBeInstanceOf(RequestMalformedError);
    expect(failure(() => readSendRequest(request({ parts: [{ text: '  ' }] })))).toBeInstanceOf(RequestMalformedError);
    expect(
      failure(() =>
        readSendRequest(request({ parts: [{ url: 'https://example.com/a.png', mediaType: 'image/png' }] })),
      ),
    ).toBeInstanceOf(ContentTypeNotSupportedError);
    expect(failure(() => readSendRequest(SendMessageRequest.fromJSON({})))).toBeInstanceOf(RequestMalformedError);
  });
});
