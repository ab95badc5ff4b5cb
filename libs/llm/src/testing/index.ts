export {
  startTestServer,
  type HttpReply,
  type LlmTestServer,
  type RecordedRequest,
  type ReplyScript,
} from './test-server.js';
export { frameSse, protocolEvents, type SseEvent, type WireProtocol } from './sse.js';
export {
  FIXTURE_NAMES,
  errorReply,
  fixtureReply,
  loadErrorBody,
  loadFixture,
  type FixtureName,
  type ProviderFixture,
} from './fixtures.js';
export { createTestLanguageModel, type TestProvider } from './test-model.js';
export { firstTurn, readFileTool } from './conversation.js';
