import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The model-transport benchmark's server, in a process of its own: a small JSON answer, or a 20-event stream. */
const answer = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
});
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    if (request.url === '/sse') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let index = 0; index < 20; index += 1) response.write(`data: {"index":${index},"text":"a few tokens"}\n\n`);
      response.end('data: [DONE]\n\n');
    } else {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      response.end(answer);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
