/**
 * Requests that Node's HTTP parser refuses before Express sees them (a malformed request line or
 * header, both Content-Length and Transfer-Encoding, headers over the size limit, a request too
 * slow to arrive) are answered with the `Error` body too, instead of Node's bare status line;
 * bytes after a complete request that is still being answered close the connection after its
 * answer instead.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBodyOf } from './error-mapper';

const BY_CODE: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'REQUEST_HEADERS_TOO_LARGE', 'The request line and headers exceed the size limit'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'The request did not arrive in time'],
};
const MALFORMED: [number, string, string] = [400, 'BAD_REQUEST', 'The request is not valid HTTP/1.1'];

export function answerClientErrors(server: Server): Server {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing to answer to, or a response of an earlier request on this connection is being
    // written (the check Node's own handler makes): close.
    const inFlight = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) return void socket.destroy();
    // Bytes that are not HTTP after a request that arrived whole (a body longer than its
    // Content-Length): that request is still being handled, and its own answer is the one the
    // client must hear (an upload PATCH stores its body; a 400 here would read as its refusal).
    // The connection closes after it.
    if (inFlight?.req?.complete) {
      inFlight.shouldKeepAlive = false;
      inFlight.once('finish', () => socket.end());
      inFlight.once('close', () => socket.end());
      return;
    }
    const [status, errorCode, message] = BY_CODE[err.code ?? ''] ?? MALFORMED;
    const requestId = randomUUID();
    const body = JSON.stringify(errorBodyOf({ requestId, requestPath: '', status, errorCode, message }));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
