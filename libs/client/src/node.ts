import WebSocket from 'ws';
import type { WebSocketLike } from './subscription.js';

/** The `ws` package as the client's WebSocket on Node.js. */
export const NodeWebSocket = WebSocket as unknown as new (url: string) => WebSocketLike;
