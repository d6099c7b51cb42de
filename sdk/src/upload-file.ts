/**
 * `uploadFile(client, path)`: a local file to a new master video through a direct resumable
 * upload. Creates the upload session (`createMasterVideoFromUpload`), then sends the bytes with
 * tus-js-client to the session's `uploadUrl` (a tus 1.0 upload resource: HEAD for the offset,
 * PATCH per chunk; its signed token is in the URL, no API key is sent there).
 *
 * Resuming: the session of a file is kept in a `ResumeStore` under the file's absolute path,
 * size and modification time. A second call for the same unchanged file (after a crash, Ctrl-C
 * or an `AbortSignal`) continues that session from the offset the server holds instead of
 * creating a new video. A session the server no longer knows (expired, removed) is forgotten and
 * a new one created. `fileResumeStore(path)` keeps sessions in a small JSON file (the CLI's);
 * the default keeps them in memory for the life of the process.
 */
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { DetailedError, Upload } from 'tus-js-client';
import { unwrap, type VidmillClient } from './client';

/** An upload session kept for resuming. */
export interface StoredUpload {
  videoId: string;
  uploadUrl: string;
  size: number;
  /** When the server forgets the session (ISO 8601). */
  expiresAt: string;
}

/** Where upload sessions are kept between attempts, by file fingerprint. */
export interface ResumeStore {
  get(key: string): Promise<StoredUpload | undefined>;
  set(key: string, upload: StoredUpload): Promise<void>;
  remove(key: string): Promise<void>;
}

export interface UploadFileOptions {
  /** Name of the video; default the file's base name. */
  name?: string;
  /** File name recorded for the source; default the file's base name. */
  fileName?: string;
  description?: string;
  projectId?: string;
  /** `selectTeamId`: the team of the new video when the caller has several. */
  teamId?: string;
  /** Full ingestion (web video, frames) rather than metadata only. */
  fullIngestion?: boolean;
  /** Expected CRC-32C of the whole file (unsigned 32-bit), checked by the server at the end. */
  crc32c?: number;
  /** Bytes per PATCH request; default 8 MiB. */
  chunkSize?: number;
  /** Called as bytes are sent (`bytesSent` counts from the start of the file, resumed bytes included). */
  onProgress?: (bytesSent: number, bytesTotal: number) => void;
  /** Called once the session is known: `resumed` is true when a stored session continues. */
  onSession?: (session: StoredUpload & { resumed: boolean; offset?: number }) => void;
  /** Where sessions are kept for resuming; default in memory. */
  resumeStore?: ResumeStore;
  /** Aborts the upload (the session stays stored, so a later call resumes it). */
  signal?: AbortSignal;
  /** Back-off of tus-js-client between retries of a failed request, in ms. */
  retryDelays?: number[];
  /** Forget a stored session of this file and start a new upload (a new video). */
  restart?: boolean;
}

/**
 * The upload URL could not be reached (no HTTP answer after tus-js-client's retries: DNS,
 * refused, reset, TLS). `resumed`: it was a stored session, whose URL may name an address the
 * server no longer has (its public URL changed); `restart: true` starts a new upload instead.
 */
export class UploadSessionUnreachableError extends Error {
  override readonly name = 'UploadSessionUnreachableError';
  constructor(
    readonly videoId: string,
    readonly uploadUrl: string,
    readonly resumed: boolean,
    cause: unknown,
  ) {
    const where = new URL(uploadUrl).origin;
    super(
      resumed
        ? `The saved upload session of video ${videoId} at ${where} cannot be reached (${reason(cause)}); the server's address may have changed since it was created`
        : `The upload URL the server answered for video ${videoId} (${where}) cannot be reached (${reason(cause)}); check the server's public address (VIDMILL_PUBLIC_URL)`,
      { cause },
    );
  }
}

/** What went wrong underneath a tus-js-client error: the request's own error (ENOTFOUND ...), else its message. */
function reason(err: unknown): string {
  const inner = err instanceof DetailedError ? (err.causingError as (Error & { code?: string }) | undefined) : undefined;
  const code = inner?.code ?? (inner?.cause as { code?: string } | undefined)?.code;
  return code ?? inner?.message ?? (err instanceof Error ? err.message : String(err));
}

/** A tus request that got no HTTP answer at all. */
function isUnreachable(err: unknown): boolean {
  return err instanceof DetailedError && !err.originalResponse;
}

/** An in-memory `ResumeStore` (the default). */
export function memoryResumeStore(): ResumeStore {
  const entries = new Map<string, StoredUpload>();
  return {
    get: async (key) => entries.get(key),
    set: async (key, upload) => void entries.set(key, upload),
    remove: async (key) => void entries.delete(key),
  };
}

/** A `ResumeStore` kept in a JSON file (`{ "<key>": StoredUpload }`), created on first write with mode 0600. */
export function fileResumeStore(file: string): ResumeStore {
  const read = async (): Promise<Record<string, StoredUpload>> => {
    try {
      const parsed: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
      return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, StoredUpload>) : {};
    } catch {
      return {};
    }
  };
  const write = async (entries: Record<string, StoredUpload>) => {
    await fs.mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, JSON.stringify(entries, null, 2) + '\n', { mode: 0o600 });
    await fs.rename(tmp, file);
  };
  return {
    get: async (key) => (await read())[key],
    async set(key, upload) {
      const entries = await read();
      // Sessions past their expiry are of no use to anyone: drop them while writing.
      for (const [k, v] of Object.entries(entries)) if (Date.parse(v.expiresAt) <= Date.now()) delete entries[k];
      entries[key] = upload;
      await write(entries);
    },
    async remove(key) {
      const entries = await read();
      if (!(key in entries)) return;
      delete entries[key];
      await write(entries);
    },
  };
}

const defaultStore = memoryResumeStore();

/** The key a file's session is stored under: absolute path, size and modification time. */
export function uploadFingerprint(absolutePath: string, size: number, mtimeMs: number): string {
  return `${absolutePath}:${size}:${Math.trunc(mtimeMs)}`;
}

/** Uploads the file at `filePath` as a new master video; resolves once every byte is stored. */
export async function uploadFile(client: VidmillClient, filePath: string, options: UploadFileOptions = {}): Promise<{ videoId: string; resumed: boolean }> {
  const absolute = path.resolve(filePath);
  const stat = await fs.stat(absolute);
  if (!stat.isFile()) throw new Error(`${filePath} is not a file`);
  const store = options.resumeStore ?? defaultStore;
  const key = uploadFingerprint(absolute, stat.size, stat.mtimeMs);
  options.signal?.throwIfAborted();

  const stored = options.restart ? undefined : await store.get(key);
  if (stored && Date.parse(stored.expiresAt) > Date.now() + 60_000 && stored.size === stat.size) {
    try {
      options.onSession?.({ ...stored, resumed: true });
      await send(absolute, stat.size, stored.uploadUrl, options);
      await store.remove(key);
      return { videoId: stored.videoId, resumed: true };
    } catch (err) {
      // The server no longer has the session (expired, removed, its token refused): start over.
      if (isUnreachable(err) && !options.signal?.aborted) throw new UploadSessionUnreachableError(stored.videoId, stored.uploadUrl, true, err);
      if (!isGone(err)) throw err;
    }
  }
  await store.remove(key);

  const base = path.basename(absolute);
  const session = unwrap(
    await client.api.POST('/v1/videos/in/uploads', {
      params: { query: { fullIngestion: options.fullIngestion, selectTeamId: options.teamId, crc32c: options.crc32c } },
      body: { name: options.name ?? base, fileName: options.fileName ?? base, size: stat.size, projectId: options.projectId, description: options.description },
    }),
  );
  const entry: StoredUpload = { videoId: session.videoId, uploadUrl: session.uploadUrl, size: session.size, expiresAt: session.expiresAt };
  await store.set(key, entry);
  options.onSession?.({ ...entry, resumed: false });
  try {
    await send(absolute, stat.size, session.uploadUrl, options);
  } catch (err) {
    if (isUnreachable(err) && !options.signal?.aborted) throw new UploadSessionUnreachableError(session.videoId, session.uploadUrl, false, err);
    throw err;
  }
  await store.remove(key);
  return { videoId: session.videoId, resumed: false };
}

/** Statuses of a tus request that mean the session is gone rather than a passing failure. */
function isGone(err: unknown): boolean {
  const status = err instanceof DetailedError ? err.originalResponse?.getStatus() : undefined;
  return status === 401 || status === 403 || status === 404 || status === 410;
}

function send(file: string, size: number, uploadUrl: string, options: UploadFileOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const upload = new Upload(createReadStream(file), {
      uploadUrl,
      uploadSize: size,
      chunkSize: options.chunkSize ?? 8 * 1024 * 1024,
      retryDelays: options.retryDelays ?? [0, 1000, 3000, 5000, 10000],
      // The session is ours to keep (the ResumeStore); tus-js-client's own URL storage is off.
      storeFingerprintForResuming: false,
      onProgress: options.onProgress ?? null,
      // As tus-js-client's default: retry what may pass (no answer, 5xx, 409 and 423 offset
      // conflicts), never a refusal (other 4xx: gone, too large, checksum) or after an abort.
      onShouldRetry: (err) => {
        const status = err.originalResponse?.getStatus() ?? 0;
        return !options.signal?.aborted && (status < 400 || status >= 500 || status === 409 || status === 423);
      },
      onSuccess: () => {
        options.signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      onError: (err) => {
        options.signal?.removeEventListener('abort', onAbort);
        reject(err);
      },
    });
    const onAbort = () => {
      const reason: unknown = options.signal?.reason;
      void upload.abort(false).then(() => reject(reason instanceof Error ? reason : new Error('The upload was aborted')));
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    upload.start();
  });
}
