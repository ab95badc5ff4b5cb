import { taskMessage } from '../support/brain-server.js';
import { describe, expect, it } from 'vitest';
import { startOtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { startTestSystem } from '../support/system.js';

describe('traces across processes (OTLP/HTTP)', () => {
  it('a trace of one user message spans the gateway, the step worker, the tool runner and the model call, parent by parent', async () => {
    await using receiver = await startOtlpReceiver();
    await using system = await startTestSystem({ gateway: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    expect((await system.api('POST', '/conversations', { id: 'traced' })).status).toBe(201);
    const sent = await system.api('POST', '/conversations/traced/messages', {
      text: taskMessage({ id: 'traced', steps: 2, effects: system.effects }),
      run: true,
    });
    expect(sent.status).toBe(202);
    const ref = { tenant: 'acme', conversation: 'traced' };
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');

    const request = (): ReceivedSpan | undefined =>
      receiver.spans.find((span) => span.service === 'gateway' && /^POST .*\/messages$/.test(span.name));
    await expect.poll(() => request(), { timeout: 20_000 }).toBeDefined();
    const root = request()!;
    const inTrace = (): ReceivedSpan[] => receiver.spans.filter((span) => span.traceId === root.traceId);
    // the last step (the finish) is exported within the batch delay
    await expect
      .poll(() => inTrace().filter((span) => span.name === 'step').length, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(3);
    // every other span of the trace hangs from one of it: no broken link across processes (each
    // process exports on its own schedule, so a parent may arrive after its child: wait for all)
    const orphans = (): string[] => {
      const ids = new Set(inTrace().map((span) => span.spanId));
      return inTrace()
        .filter((span) => span !== root && (span.parentSpanId === undefined || !ids.has(span.parentSpanId)))
        .map((span) => `${span.service} ${span.name}`);
    };
    await expect.poll(orphans, { timeout: 20_000 }).toEqual([]);
    const trace = inTrace();
    const byId = new Map(trace.map((span) => [span.spanId, span]));
    const parentOf = (span: ReceivedSpan): ReceivedSpan | undefined =>
      span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId);

    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes['http.response.status_code']).toBe(202);

    const steps = trace.filter((span) => span.name === 'step');
    expect(new Set(steps.map((span) => span.service))).toEqual(new Set(['step-worker']));
    // the gateway's commit wakes the tool runner first (it reads the workspace's context for the first step)
    expect(trace.filter((span) => parentOf(span) === root).map((span) => `${span.service} ${span.name}`)).toEqual([
      'tool-runner tool_batch',
    ]);
    // and every step reacts to a tool runner's commit: the context, then each batch's observations
    for (const step of steps) expect(parentOf(step)?.name).toBe('tool_batch');
    const modelCalls = trace.filter((span) => span.name === 'chat brain');
    expect(modelCalls.length).toBeGreaterThanOrEqual(3);
    for (const call of modelCalls) expect(parentOf(call)?.name, 'a model call is a child of a step').toBe('step');
    expect(modelCalls[0]!.attributes['gen_ai.request.model']).toBe('brain');
    expect(modelCalls[0]!.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);

    const batches = trace.filter((span) => span.name === 'tool_batch');
    expect(batches.length).toBeGreaterThanOrEqual(3);
    for (const batch of batches) {
      expect(batch.service).toBe('tool-runner');
      expect(
        parentOf(batch) === root || parentOf(batch)?.name === 'step',
        'a tool batch reacts to the message or a step commit',
      ).toBe(true);
    }
    const tools = trace.filter((span) => span.name === 'tool terminal');
    expect(tools).toHaveLength(2);
    for (const tool of tools) expect(parentOf(tool)?.name).toBe('tool_batch');
    // the second step reacts to the first tool call's observations: gateway → … → step → tool → step, one trace
    const firstTool = tools.find((tool) => steps.some((step) => step.parentSpanId === tool.parentSpanId));
    expect(firstTool, 'a step whose parent is the batch that ran a tool').toBeDefined();
  }, 120_000);
});
