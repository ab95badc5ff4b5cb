import { RunnerSubjects } from '@flotilla/bus';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerRegistry } from './runner-registry.js';
import {
  answerWorkspace,
  askWorkspace,
  parseWorkspaceRequest,
  workspaceChunkBytes,
  WorkspaceRequestError,
  type WorkspaceRequest,
} from './workspace-requests.js';

let server: NatsTestServer;
let nc: NatsConnection;
let runners: RunnerRegistry;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  runners = await RunnerRegistry.open(nc, {
    runnersBucket: uniqueName('runners'),
    workspacesBucket: uniqueName('workspaces'),
    livenessMs: 5_000,
  });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

/** A runner that answers on its own subject (and on the one any runner takes, when `any`) with `answer`; what it was asked is kept. */
function fakeRunner(
  id: string,
  answer: (request: WorkspaceRequest) => Parameters<typeof answerWorkspace>[2],
  any = false,
): { asked: (WorkspaceRequest | string)[]; stop(): void } {
  const asked: (WorkspaceRequest | string)[] = [];
  const callback = (_error: unknown, message: Msg): void => {
    const request = parseWorkspaceRequest(message);
    asked.push(request);
    if (typeof request === 'string') answerWorkspace(message, id, { code: 'invalid_request', message: request });
    else answerWorkspace(message, id, answer(request));
  };
  const subscriptions = [
    nc.subscribe(RunnerSubjects.workspace(id), { callback }),
    ...(any ? [nc.subscribe(RunnerSubjects.workspaceAny, { queue: RunnerSubjects.deleteQueue, callback })] : []),
  ];
  return { asked, stop: () => subscriptions.forEach((subscription) => subscription.unsubscribe()) };
}

describe('workspace requests over core NATS', () => {
  it('reaches the live owner with the operation and the bytes, and brings back its answer', async () => {
    const ref = { tenant: 'acme', conversation: 'owned' };
    await runners.heartbeat('runner-a');
    expect(await runners.claim(ref, 'runner-a', undefined)).toBe(true);
    const owner = fakeRunner('runner-a', (request) => ({
      meta: { received: request.data.length, op: request.op.op },
      data: Buffer.from('chunk'),
    }));
    try {
      // a path may hold any character: the operation travels as one line of ASCII
      const path = 'docs/ünï cödé\nline.txt';
      const answer = await askWorkspace(
        nc,
        runners,
        ref,
        { op: 'write', path, upload: '0123456789abcdefXYZ', offset: 0, final: false },
        Buffer.from('hello'),
      );
      expect(answer).toMatchObject({ runner: 'runner-a', meta: { received: 5, op: 'write' } });
      expect(Buffer.from(answer.data).toString()).toBe('chunk');
      expect(owner.asked[0]).toMatchObject({ ref, op: { path } });
    } finally {
      owner.stop();
    }
  });

  it('asks any runner when the owner is dead or unknown, and follows a runner that says the workspace moved', async () => {
    const ref = { tenant: 'acme', conversation: 'orphan' };
    await runners.claim(ref, 'runner-dead', undefined); // never heartbeats
    const taker = fakeRunner('runner-b', () => ({ meta: { listed: true } }), true);
    const stale = fakeRunner('runner-c', () => ({ code: 'moved', message: 'not mine' }));
    try {
      expect((await askWorkspace(nc, runners, ref, { op: 'list', path: '' })).runner).toBe('runner-b');
      // a transfer's hint that went stale: the owner is looked up again
      expect(
        (await askWorkspace(nc, runners, ref, { op: 'list', path: '' }, undefined, { runner: 'runner-c' })).runner,
      ).toBe('runner-b');
      expect(stale.asked).toHaveLength(1);
      // a hint naming a runner that is gone
      expect(
        (await askWorkspace(nc, runners, ref, { op: 'list', path: '' }, undefined, { runner: 'runner-gone' })).runner,
      ).toBe('runner-b');
    } finally {
      taker.stop();
      stale.stop();
    }
    // a runner that knows who owns it (the workspace is another conversation's: a sub-agent's shared one) says so, and is followed
    const owner = fakeRunner('runner-owner', () => ({ meta: { listed: 'by the owner' } }));
    const pointing = fakeRunner(
      'runner-pointing',
      () => ({ code: 'moved', message: 'the parent’s workspace', owner: 'runner-owner' }),
      true,
    );
    try {
      expect(
        await askWorkspace(nc, runners, { tenant: 'acme', conversation: 'child' }, { op: 'list', path: '' }),
      ).toMatchObject({ runner: 'runner-owner', meta: { listed: 'by the owner' } });
    } finally {
      owner.stop();
      pointing.stop();
    }
  });

  it('says no runner answers when none runs, and passes a refusal on with its code', async () => {
    const ref = { tenant: 'acme', conversation: 'nobody' };
    const none = await askWorkspace(nc, runners, ref, { op: 'list', path: '' }).catch((error: unknown) => error);
    expect(none).toBeInstanceOf(WorkspaceRequestError);
    expect(none).toMatchObject({ code: 'no_runner', isRetryable: true });
    const refusing = fakeRunner(
      'runner-d',
      () => ({ code: 'outside_workspace', message: 'a symlink on it points outside' }),
      true,
    );
    try {
      await expect(
        askWorkspace(nc, runners, ref, { op: 'read', path: 'link', offset: 0, length: 10, max_size: 100 }),
      ).rejects.toMatchObject({
        code: 'outside_workspace',
        isRetryable: false,
        message: 'a symlink on it points outside',
      });
    } finally {
      refusing.stop();
    }
  });

  it('refuses a request that names no conversation or an operation it does not know', async () => {
    const echo = fakeRunner('runner-e', () => ({ meta: {} }));
    try {
      const answer = await askWorkspace(
        nc,
        runners,
        { tenant: 'acme', conversation: 'x' },
        { op: 'nonsense' } as never,
        undefined,
        { runner: 'runner-e' },
      ).catch((error: unknown) => error);
      expect(answer).toMatchObject({ code: 'invalid_request' });
      expect(echo.asked[0]).toContain('Flotilla-Workspace-Op');
    } finally {
      echo.stop();
    }
  });

  it('sizes chunks to the server’s max_payload', () => {
    expect(workspaceChunkBytes(nc)).toBe(512 * 1024);
  });
});
