/**
 * BlobStore on any S3-compatible object store (scale-out), with @aws-sdk/client-s3.
 * Uploads are S3 multipart uploads: CreateMultipartUpload, UploadPart (parts in parallel, any
 * order), ListParts (what is already stored, for resume and for the ETags of completion),
 * CompleteMultipartUpload, AbortMultipartUpload.
 *
 * The SDK's default request checksums (x-amz-checksum-* and aws-chunked bodies) are asked for
 * only when an operation requires them: several S3-compatible stores refuse them.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { s3Sdk } from './s3-sdk';
import type { Readable } from 'node:stream';
import {
  assertRange,
  assertValidKey,
  assertValidSize,
  BlobNotFoundError,
  BlobStat,
  BlobStore,
  ByteRange,
  choosePartSize,
  collectPart,
  MAX_PARTS,
  MIN_PART_SIZE,
  partCountOf,
  partRangeOf,
  Upload,
  UploadDescriptor,
} from './blob-store';

export interface S3StoreSettings {
  bucket: string;
  /** An S3-compatible endpoint; absent means AWS S3. */
  endpoint?: string;
  region: string;
  accessKey: string;
  secretKey: string;
  forcePathStyle: boolean;
}

export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  readonly bucket: string;

  constructor(readonly settings: S3StoreSettings) {
    this.bucket = settings.bucket;
    this.client = new (s3Sdk().S3Client)({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      credentials: { accessKeyId: settings.accessKey, secretAccessKey: settings.secretKey },
      ignoreConfiguredEndpointUrls: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
    });
  }

  async createUpload(key: string, size: number, opts: { partSize?: number } = {}): Promise<Upload> {
    assertValidKey(key);
    assertValidSize(size);
    const partSize = opts.partSize ?? choosePartSize(size);
    const parts = partCountOf(size, partSize);
    if (parts > MAX_PARTS) throw new Error(`${parts} parts exceed S3's ${MAX_PARTS}`);
    if (parts > 1 && partSize < MIN_PART_SIZE) throw new Error(`S3 parts must be at least ${MIN_PART_SIZE} bytes`);
    const out = await this.client.send(new (s3Sdk().CreateMultipartUploadCommand)({ Bucket: this.bucket, Key: key }));
    if (!out.UploadId) throw new Error('CreateMultipartUpload returned no UploadId');
    return new S3Upload(this, { store: 's3', id: out.UploadId, key, size, partSize });
  }

  async resumeUpload(descriptor: UploadDescriptor): Promise<Upload> {
    assertValidKey(descriptor.key);
    const upload = new S3Upload(this, descriptor);
    await upload.completedParts(); // NoSuchUpload surfaces here
    return upload;
  }

  async put(key: string, data: Buffer, opts: { contentType?: string } = {}): Promise<void> {
    assertValidKey(key);
    await this.client.send(new (s3Sdk().PutObjectCommand)({ Bucket: this.bucket, Key: key, Body: data, ContentLength: data.length, ContentType: opts.contentType }));
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    assertValidKey(key);
    assertRange(range);
    try {
      const out = await this.client.send(new (s3Sdk().GetObjectCommand)({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end ?? ''}` : undefined }));
      const body = out.Body as Readable;
      if (range && !rangeHonoured(range, out.ContentRange)) {
        body.destroy();
        throw new Error(`the object store answered ${out.ContentRange ?? 'the whole object'} for a request of bytes=${range.start}-${range.end ?? ''}`);
      }
      return body;
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key);
      throw err;
    }
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    assertValidKey(key);
    try {
      const out = await this.client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: this.bucket, Key: key }));
      return { size: Number(out.ContentLength ?? 0), lastModified: out.LastModified ?? new Date(0), etag: out.ETag };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.client.send(new (s3Sdk().DeleteObjectCommand)({ Bucket: this.bucket, Key: key }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** Where a multipart upload lives: a client and a bucket (platform storage or a customer's bucket). */
export interface MultipartTarget {
  readonly client: S3Client;
  readonly bucket: string;
}

/**
 * One S3 multipart upload as an `Upload`. The key is not checked here: platform keys are checked
 * by S3BlobStore, and video out writes under the customer's own keys.
 */
export class S3Upload implements Upload {
  readonly partCount: number;

  constructor(
    private readonly store: MultipartTarget,
    readonly descriptor: UploadDescriptor,
  ) {
    this.partCount = partCountOf(descriptor.size, descriptor.partSize);
  }

  private get ids() {
    return { Bucket: this.store.bucket, Key: this.descriptor.key, UploadId: this.descriptor.id };
  }

  partRange(partNumber: number) {
    return partRangeOf(this.descriptor, partNumber);
  }

  /** Stored parts of the right length, with their ETags. */
  private async listParts(): Promise<Map<number, string>> {
    const parts = new Map<number, string>();
    let marker: string | undefined;
    for (;;) {
      const out = await this.store.client.send(new (s3Sdk().ListPartsCommand)({ ...this.ids, PartNumberMarker: marker, MaxParts: 1000 }));
      for (const p of out.Parts ?? []) {
        const n = Number(p.PartNumber);
        if (!Number.isInteger(n) || n < 1 || n > this.partCount || !p.ETag) continue;
        const { start, end } = this.partRange(n);
        if (Number(p.Size) === end - start) parts.set(n, p.ETag);
      }
      if (!out.IsTruncated || !out.NextPartNumberMarker) return parts;
      marker = String(out.NextPartNumberMarker);
    }
  }

  async completedParts(): Promise<number[]> {
    return [...(await this.listParts()).keys()].sort((a, b) => a - b);
  }

  async writePart(partNumber: number, data: Buffer | AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<void> {
    const { start, end } = this.partRange(partNumber);
    const body = await collectPart(data, end - start, signal);
    await this.store.client.send(new (s3Sdk().UploadPartCommand)({ ...this.ids, PartNumber: partNumber, Body: body, ContentLength: body.length }), {
      abortSignal: signal,
    });
  }

  async complete(): Promise<void> {
    const parts = await this.listParts();
    if (parts.size !== this.partCount) {
      throw new Error(`upload of ${this.descriptor.key} is missing ${this.partCount - parts.size} of ${this.partCount} parts`);
    }
    await this.store.client.send(
      new (s3Sdk().CompleteMultipartUploadCommand)({
        ...this.ids,
        MultipartUpload: { Parts: [...parts].sort(([a], [b]) => a - b).map(([PartNumber, ETag]) => ({ PartNumber, ETag })) },
      }),
    );
  }

  async abort(): Promise<void> {
    try {
      await this.store.client.send(new (s3Sdk().AbortMultipartUploadCommand)(this.ids));
    } catch (err) {
      if ((err as { name?: string }).name !== 'NoSuchUpload') throw err;
    }
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

/** A store that ignores or bends a Range must not hand back other bytes than asked for. */
function rangeHonoured(range: ByteRange, contentRange: string | undefined): boolean {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(contentRange ?? '');
  if (!m) return false;
  const [start, end, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const wantedEnd = Math.min(range.end ?? total - 1, total - 1);
  return start === range.start && end === wantedEnd;
}
