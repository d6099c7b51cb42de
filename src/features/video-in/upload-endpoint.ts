/**
 * The tus 1.0 endpoint of direct resumable uploads (docs/uploads.md), served with @tus/server
 * outside `/api` at `/tus/uploads/<uploadId>?token=...`.
 *
 * Before @tus/server sees a request, this router decides what only Vidmill knows: the signed
 * token (403 `ACCESS_DENIED`, it authorizes that one upload until the session's end), whether the
 * upload still exists (404 `NOT_FOUND`; 410 with the video-in error code once it has failed,
 * expired or been terminated), the session's end (a request past it ends the upload with
 * `UPLOAD_EXPIRED` and is answered 410), termination (`DELETE`: FAILED `UPLOAD_ABANDONED`, bytes
 * removed), and an upload whose last byte has already arrived (HEAD answers its full offset from
 * the database, since its bytes move into platform storage). Everything else (HEAD offsets,
 * PATCH with its offset and size checks, OPTIONS) is @tus/server's, whose text errors are turned
 * into the JSON `Error` body here.
 *
 * Progress: bytes stored (@tus/server's `POST_RECEIVE`, about once a second, and the end of each
 * PATCH's write) are written to the video at most about once a second per upload; the
 * last byte records the upload as received and enqueues its finishing job in one transaction,
 * before the client hears 204 (video-in.jobs.ts finishes it).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { Request, Response, Router } from 'express';
import type { Logger } from 'pino';
import type { Server as TusServer } from '@tus/server';
import { errorBodyOf, sendError } from '../../http/error-mapper';
import { repeatedApiKey, type ApiKeyCheck } from '../../http/auth';
import { rateLimitExceeded, type RequestLimiter } from '../../http/rate-limit';
import { repeatedHeader } from '../../http/single-headers';
import type { Clock } from '../../shared/clock';
import { BadRequestError, UnauthorizedError } from '../../shared/errors';
import { recordUploadBytes } from '../../shared/metrics';
import { TUS_PATH, uploadPath, VideoInService } from './video-in.service';

const UPLOAD_ID = /^[0-9a-f]{32}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROGRESS_EVERY_MS = 1000;

/** An upload this process is receiving: what its progress writes need. */
interface Tracked {
  videoId: string;
  size: number;
  latest: number;
  written: number;
  lastWriteAt: number;
  timer?: NodeJS.Timeout;
}

/** The one Content-Type of a tus PATCH body. */
const TUS_PATCH_TYPE = 'application/offset+octet-stream';

/** @tus/server's text errors as the `Error` body's code (its messages are fixed texts). */
const TUS_ERROR_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  403: 'BAD_REQUEST',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  410: 'NOT_FOUND',
  412: 'BAD_REQUEST',
  413: 'PAYLOAD_TOO_LARGE',
  460: 'CHECKSUM_MISMATCH',
};

export class UploadEndpoint {
  private tus?: TusServer;
  private readonly tracked = new Map<string, Tracked>();
  private readonly current = new AsyncLocalStorage<{ req: Request; res: Response }>();

  constructor(
    private readonly videoIn: VideoInService,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** API keys, for the tus creation extension (POST /tus/uploads with X-API-Key). */
    private readonly apiKeys: ApiKeyCheck,
    /** The API's per-key request budget: a creation counts as one API request of its key. */
    private readonly rateLimiter: RequestLimiter,
  ) {}

  routes(): Router {
    const router = express.Router();
    router.options([TUS_PATH, `${TUS_PATH}/:uploadId`], (req, res) => this.passOn(req, res));
    router.post(TUS_PATH, async (req, res, next) => {
      try {
        await this.create(req, res);
      } catch (err) {
        next(err);
      }
    });
    router.all(`${TUS_PATH}/:uploadId`, async (req, res, next) => {
      try {
        await this.handle(req, res);
      } catch (err) {
        next(err);
      }
    });
    return router;
  }

  private async handle(req: Request, res: Response): Promise<void> {
    res.setHeader('Tus-Resumable', '1.0.0');
    res.setHeader('Cache-Control', 'no-store');
    if (!['HEAD', 'PATCH', 'DELETE'].includes(req.method)) {
      return sendError(req, res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on an upload`, { headers: { Allow: 'HEAD, PATCH, DELETE, OPTIONS' } });
    }
    const uploadId = String(req.params.uploadId);
    // Only the Location URL is the upload: `<id>/` (which Express's loose routing would match)
    // is 404 for every method, as @tus/server answers HEAD and PATCH there.
    if (!UPLOAD_ID.test(uploadId) || req.path.endsWith('/')) return sendError(req, res, 404, 'NOT_FOUND', 'No such upload');
    const now = this.clock.now();
    const verdict = this.videoIn.links.verifyToken(uploadPath(uploadId), req.query.token, now);
    if (verdict === 'invalid') return sendError(req, res, 403, 'ACCESS_DENIED', 'The upload URL needs its token: the token is missing or not valid for this upload');
    const op = await this.videoIn.uploadOperation(uploadId);
    const video = op && (await this.videoIn.video(op.videoId));
    if (!op || !video?.upload) return sendError(req, res, 404, 'NOT_FOUND', 'No such upload');
    if (video.upload.status === 'FAILED') return this.gone(req, res, video.upload.error);
    const size = op.pinned.size;
    if (op.uploadReceivedAt || video.upload.status === 'DONE') return this.received(req, res, size);
    if (verdict === 'expired' || (op.uploadExpiresAt && op.uploadExpiresAt.getTime() <= now.getTime())) {
      await this.videoIn.endUpload(op.videoId, 'UPLOAD_EXPIRED');
      this.forget(this.videoIn.uploadStoreId(op.videoId));
      const after = await this.videoIn.video(op.videoId);
      return this.gone(req, res, after?.upload?.error);
    }
    const storeId = this.videoIn.uploadStoreId(op.videoId);
    if (req.method === 'DELETE') {
      await this.videoIn.endUpload(op.videoId, 'UPLOAD_ABANDONED');
      this.forget(storeId);
      res.status(204).end();
      return;
    }
    // tus 1.0: a PATCH's Content-Type MUST be application/offset+octet-stream, else 415
    // (@tus/server checks only that there is one, and answers its absence with 403).
    if (req.method === 'PATCH') {
      if (req.headers['content-type']?.trim().toLowerCase() !== TUS_PATCH_TYPE) {
        return sendError(req, res, 415, 'UNSUPPORTED_CONTENT_TYPE', `A PATCH sends the bytes as Content-Type: ${TUS_PATCH_TYPE}`);
      }
      // Media types ignore letter case; @tus/server (which reads the raw headers) does not.
      req.headers['content-type'] = TUS_PATCH_TYPE;
      for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'content-type') req.rawHeaders[i + 1] = TUS_PATCH_TYPE;
    }
    // A PATCH may only declare the length of a deferred-length upload, which these never are
    // (@tus/server would answer 501: its stores do not list creation-defer-length).
    if (req.method === 'PATCH' && req.headers['upload-length'] !== undefined) {
      return sendError(req, res, 400, 'BAD_REQUEST', `Upload-Length was set when the upload was created (${size} bytes); a PATCH does not send it`);
    }
    if (req.method === 'HEAD' && (await this.videoIn.uploads.offset(storeId)) === size) {
      // Every byte is stored but the finish was not recorded (its PATCH failed after the write).
      await this.videoIn.uploadReceived(op.videoId, size);
      return this.received(req, res, size);
    }
    // The tus expiration extension's header: when the session ends (the stores know no expiry).
    if (op.uploadExpiresAt) res.setHeader('Upload-Expires', op.uploadExpiresAt.toUTCString());
    if (!this.tracked.has(storeId)) this.tracked.set(storeId, { videoId: op.videoId, size, latest: 0, written: -1, lastWriteAt: 0 });
    await this.passOn(req, res);
  }

  /**
   * The tus creation extension: `POST /tus/uploads` with `X-API-Key`, `Upload-Length` and
   * `Upload-Metadata` (`name`, optional `filename`, `projectId`, `teamId`, `fullIngestion`,
   * `crc32c`) creates the session exactly as `createMasterVideoFromUpload` does; `Location` is
   * the signed upload URL. A body sent with the creation (creation-with-upload) is not stored:
   * `Upload-Offset: 0` tells the client to send it with PATCH.
   */
  private async create(req: Request, res: Response): Promise<void> {
    res.setHeader('Tus-Resumable', '1.0.0');
    req.resume(); // any creation-with-upload body is not read
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') throw new UnauthorizedError('MISSING_API_KEY', 'The X-API-Key header is required');
    if (repeatedHeader(req, ['x-api-key'])) throw repeatedApiKey();
    const principal = this.apiKeys.cachedPrincipal(key) ?? (await this.apiKeys.authenticate(key));
    if (principal.apiKeyId !== undefined) {
      const decision = await this.rateLimiter.consume(principal.apiKeyId);
      res.setHeader('X-RateLimit-Limit', String(this.rateLimiter.points));
      res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
      if (!decision.allowed) throw rateLimitExceeded(`Rate limit of ${this.rateLimiter.points} requests per minute exceeded`, decision);
    }
    if (req.headers['tus-resumable'] !== '1.0.0') return sendError(req, res, 412, 'BAD_REQUEST', 'Tus-Resumable: 1.0.0 is required');
    const length = String(req.headers['upload-length'] ?? '');
    if (!/^\d{1,15}$/.test(length) || Number(length) < 1) {
      throw new BadRequestError('VALIDATION_ERROR', 'Upload-Length must be the file size in bytes (at least 1); deferred lengths are not supported');
    }
    const meta = parseUploadMetadata(String(req.headers['upload-metadata'] ?? ''));
    const name = meta.get('name');
    if (!name || !/\S/.test(name) || name.length > 255) throw new BadRequestError('VALIDATION_ERROR', 'Upload-Metadata needs a name (1 to 255 characters, not only white space)');
    const fileName = meta.get('filename');
    if (fileName !== undefined && (fileName.length < 1 || fileName.length > 255)) throw new BadRequestError('VALIDATION_ERROR', 'filename must have 1 to 255 characters');
    for (const field of ['projectId', 'teamId']) {
      const v = meta.get(field);
      if (v !== undefined && !UUID.test(v)) throw new BadRequestError('VALIDATION_ERROR', `${field} must be a UUID`);
    }
    const fullIngestion = meta.get('fullIngestion');
    if (fullIngestion !== undefined && fullIngestion !== 'true' && fullIngestion !== 'false') throw new BadRequestError('VALIDATION_ERROR', 'fullIngestion must be true or false');
    const crc = meta.get('crc32c');
    if (crc !== undefined && (!/^\d{1,10}$/.test(crc) || Number(crc) > 0xffffffff)) throw new BadRequestError('VALIDATION_ERROR', 'crc32c must be an unsigned 32-bit integer');
    const session = await this.videoIn.createFromUpload(principal.userId, {
      name,
      fileName,
      projectId: meta.get('projectId'),
      selectTeamId: meta.get('teamId'),
      fullIngestion: fullIngestion === 'true',
      size: Number(length),
      crc32c: crc === undefined ? undefined : Number(crc),
    });
    res.setHeader('Location', session.uploadUrl);
    res.setHeader('Upload-Offset', '0');
    res.setHeader('X-Video-Id', session.video.id);
    res.setHeader('Upload-Expires', session.expiresAt.toUTCString());
    res.status(201).end();
  }

  /** 410 for an upload that has ended without its file (expired, terminated, failed). */
  private gone(req: Request, res: Response, error: { code: string; message: string } | undefined): void {
    sendError(req, res, 410, error?.code ?? 'NOT_FOUND', error?.message ?? 'The upload has ended; create a new one');
  }

  /** Every byte is there (the file is being, or has been, made the master video). */
  private received(req: Request, res: Response, size: number): void {
    res.setHeader('Upload-Offset', String(size));
    res.setHeader('Upload-Length', String(size));
    if (req.method === 'HEAD') return void res.status(200).end();
    if (req.method === 'PATCH' && req.headers['upload-offset'] === String(size) && (req.headers['content-length'] ?? '0') === '0') return void res.status(204).end();
    if (req.method === 'PATCH') return sendError(req, res, 409, 'CONFLICT', `The upload is complete: all ${size} bytes have been received`);
    sendError(req, res, 400, 'BAD_REQUEST', 'The upload is complete and can no longer be terminated');
  }

  private passOn(req: Request, res: Response): Promise<void> {
    return this.current.run({ req, res }, () => this.server().handle(req as IncomingMessage, res as ServerResponse));
  }

  private server(): TusServer {
    if (this.tus) return this.tus;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an ES module loaded on first use (storage/tus-storage.ts)
    const { Server, EVENTS } = require('@tus/server') as typeof import('@tus/server');
    const current = this.current;
    const log = this.log;
    /** @tus/server's answers, with its text error bodies as the JSON `Error` body. */
    class JsonErrorServer extends Server {
      override async write(...args: Parameters<TusServer['write']>): ReturnType<TusServer['write']> {
        const [context, headers, status, body] = args;
        const ctx = current.getStore();
        if (status < 400 || !ctx) return super.write(context, headers, status, body);
        const message = status >= 500 ? 'The upload could not be stored; retry from the offset HEAD reports' : (body ?? '').trim() || 'The upload request was refused';
        headers.set('Content-Type', 'application/json; charset=utf-8');
        const requestId = String(ctx.res.getHeader('X-Request-Id') ?? '');
        const json = errorBodyOf({
          requestId,
          requestPath: ctx.req.originalUrl.split('?')[0]!,
          status,
          errorCode: TUS_ERROR_CODES[status] ?? (status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST'),
          message,
        });
        return super.write(context, headers, status, JSON.stringify(json));
      }
    }
    const datastore = this.videoIn.uploads.datastore;
    // What OPTIONS advertises (Tus-Extension): creation (POST /tus/uploads, without a body and
    // without deferred length), termination, and the expiration header; not what the stores
    // could do in another setting.
    datastore.extensions = ['creation', 'termination', 'expiration'];
    // Every stored PATCH body: the metrics, and the progress written to the video.
    const write = datastore.write.bind(datastore);
    datastore.write = async (stream, id, offset) => {
      const reached = await write(stream, id, offset);
      recordUploadBytes(reached - offset);
      this.note(id, reached);
      return reached;
    };
    this.tus = new JsonErrorServer({
      path: TUS_PATH,
      datastore,
      // The id is the last path segment (the default also reads the query string into it).
      getFileIdFromRequest: (req) => {
        const m = /\/([0-9a-f]{32})$/.exec(new URL(req.url).pathname);
        return m ? this.videoIn.uploadStoreId(videoIdOf(m[1]!)) : undefined;
      },
      onUploadFinish: async (_req, upload) => {
        const t = this.tracked.get(upload.id);
        if (!t) throw new Error(`upload ${upload.id} finished without a session`);
        await this.videoIn.uploadReceived(t.videoId, t.size);
        this.forget(upload.id);
        return {};
      },
      onResponseError: (_req, err) => {
        if (err instanceof Error || !('status_code' in err) || err.status_code >= 500) log.error({ err }, 'tus upload request failed');
        return undefined;
      },
    });
    // Bytes received so far while a PATCH body is being stored (every postReceiveInterval, 1 s).
    // PATCH bodies go from the request's Node stream to the store: patches/@tus+server+*.patch.
    this.tus.on(EVENTS.POST_RECEIVE, (_req, upload) => {
      if (upload.offset !== undefined) this.note(upload.id, upload.offset);
    });
    return this.tus;
  }

  /** Bytes stored so far: written to the video now, or once a second has passed since the last write. */
  private note(storeId: string, offset: number): void {
    const t = this.tracked.get(storeId);
    if (!t || offset >= t.size) return; // the last byte is recorded by onUploadFinish
    t.latest = Math.max(t.latest, offset);
    if (t.timer) return;
    t.timer = setTimeout(() => void this.flush(storeId, t), Math.max(0, t.lastWriteAt + PROGRESS_EVERY_MS - Date.now()));
    t.timer.unref();
  }

  private async flush(storeId: string, t: Tracked): Promise<void> {
    t.timer = undefined;
    if (t.latest === t.written || !this.tracked.has(storeId)) return;
    t.written = t.latest;
    t.lastWriteAt = Date.now();
    try {
      await this.videoIn.uploadProgress(t.videoId, t.written, t.size);
    } catch (err) {
      this.log.warn({ err, videoId: t.videoId }, 'upload progress write failed');
    }
  }

  private forget(storeId: string): void {
    const t = this.tracked.get(storeId);
    if (t?.timer) clearTimeout(t.timer);
    this.tracked.delete(storeId);
  }
}

/** The video id of a tus upload id (its 32 hex digits with the dashes of a UUID). */
export function videoIdOf(uploadId: string): string {
  return `${uploadId.slice(0, 8)}-${uploadId.slice(8, 12)}-${uploadId.slice(12, 16)}-${uploadId.slice(16, 20)}-${uploadId.slice(20)}`;
}

/** tus `Upload-Metadata`: comma-separated `key base64value` pairs (a key alone has an empty value). */
export function parseUploadMetadata(header: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!header.trim()) return out;
  for (const pair of header.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key || extra !== undefined || out.has(key) || (value !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(value))) {
      throw new BadRequestError('VALIDATION_ERROR', 'Upload-Metadata must be comma-separated "key base64value" pairs with unique keys');
    }
    out.set(key, value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8'));
  }
  return out;
}
