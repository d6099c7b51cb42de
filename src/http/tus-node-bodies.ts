/**
 * A run-time patch of @tus/server (2.4.x): PATCH bodies go from Node's request stream to the data
 * store directly, instead of Node stream -> web ReadableStream (srvx's `Readable.toWeb`) -> Node
 * stream again (`Readable.fromWeb` in the PATCH handler). Measured with `npm run bench -- uploads`
 * (1 GiB, one PATCH, local disk), the double conversion cost most of the throughput and buffered
 * ahead of the disk (Node 20's `Readable.toWeb` reads without waiting for its consumer).
 *
 * Two private places are replaced on one Server instance: its request `handler`, which for a
 * PATCH shadows the srvx request's `body` getter with the Node request itself (srvx only builds
 * its web stream when `body` is read, so nothing else consumes the request), and the PATCH
 * handler's `writeToStore`, which now takes that Node stream (a web stream still works). The
 * replacement keeps the original's behaviour: the size limit (413), an aborted request or a
 * client that went away answered as `ABORTED`, the request left undestroyed on errors so the
 * answer reaches the client. `install` throws when an upgrade removed either place, and
 * test/scenarios/uploads.test.ts sends every upload through it.
 */
import { PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Server } from '@tus/server';
import type { DataStore, Upload } from '@tus/utils';

type TusErrors = typeof import('@tus/utils').ERRORS;

interface SrvxRequest {
  method: string;
  runtime?: { node?: { req?: Readable } };
}

interface PatchInternals {
  store: DataStore;
  writeToStore(body: Readable | WebReadableStream | null, upload: Upload, maxFileSize: number, context: { signal: AbortSignal }): Promise<number>;
}

/** Installs the patch on `server`; `onBytes` hears every chunk's new offset while a PATCH body is stored. */
export function streamTusBodiesDirectly(server: Server, errors: TusErrors, onBytes: (storeId: string, offset: number) => void): void {
  const internals = server as unknown as { handler?: (req: SrvxRequest) => Promise<Response> };
  const patch = server.handlers.PATCH as unknown as Partial<PatchInternals>;
  if (typeof internals.handler !== 'function' || typeof patch.writeToStore !== 'function' || !patch.store) {
    throw new Error('@tus/server no longer has Server.handler or PatchHandler.writeToStore: update src/http/tus-node-bodies.ts');
  }
  const handler = internals.handler.bind(server);
  internals.handler = (req) => {
    const node = req.runtime?.node?.req;
    if (req.method === 'PATCH' && node) Object.defineProperty(req, 'body', { value: node, configurable: true });
    return handler(req);
  };
  const store = patch.store;
  patch.writeToStore = async (body, upload, maxFileSize, context) => {
    // @tus/server throws (and answers) its plain `{ status_code, body }` error objects.
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the tus handlers catch and answer these objects
    if (context.signal.aborted) throw errors.ABORTED;
    const source: Readable = body instanceof Readable ? body : body ? Readable.fromWeb(body) : Readable.from([]);
    // The store reads from a proxy, so an error on its side never destroys the request (whose
    // answer the client still needs); a request error ends the proxy instead.
    const proxy = new PassThrough();
    let sourceError: unknown;
    const onSourceError = (err: unknown) => {
      sourceError = err;
      source.unpipe(proxy);
      if (!context.signal.aborted) proxy.destroy(err as Error);
    };
    source.on('error', onSourceError);
    const onAbort = () => {
      source.unpipe(proxy);
      if (!proxy.destroyed) proxy.end();
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    let received = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received > maxFileSize) return callback(errors.ERR_MAX_SIZE_EXCEEDED as unknown as Error);
        onBytes(upload.id, upload.offset + received);
        callback(null, chunk);
      },
    });
    try {
      let reached = upload.offset;
      await pipeline(source.pipe(proxy), limit, async (s: AsyncIterable<Buffer>) => {
        reached = await store.write(s as Readable, upload.id, upload.offset);
      });
      return reached;
    } catch (err) {
      source.unpipe(proxy);
      const aborted = (sourceError !== undefined && err === sourceError) || (err instanceof Error && err.name === 'AbortError');
      throw aborted ? errors.ABORTED : err;
    } finally {
      source.off('error', onSourceError);
      context.signal.removeEventListener('abort', onAbort);
    }
  };
}
