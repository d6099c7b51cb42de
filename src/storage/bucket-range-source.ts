/**
 * A byte-range source over an object in a customer bucket, for the copy engine: `probe()` is
 * HeadObject (size, ETag), `openRange()` a ranged GetObject with `If-Match` on the pinned ETag.
 * The ETag and Content-Range of every answer are checked too, for S3-compatible stores that
 * ignore `If-Match`: an object replaced during the copy fails it with SourceChangedError.
 * Errors of HeadObject are passed through for the caller to classify (404, refused credentials).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { s3Sdk } from './s3-sdk';
import { parseContentRange, RangeSource, SourceChangedError, SourceHttpError, SourceInfo } from '../net/https-range-source';

export class BucketRangeSource implements RangeSource {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
  ) {}

  async probe(signal?: AbortSignal): Promise<SourceInfo> {
    const out = await this.client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: this.bucket, Key: this.key }), { abortSignal: signal });
    return {
      size: Number(out.ContentLength ?? 0),
      etag: out.ETag,
      lastModified: out.LastModified?.toUTCString(),
      validator: out.ETag,
      contentType: out.ContentType,
    };
  }

  async openRange(start: number, end: number, pinned: SourceInfo, signal?: AbortSignal): Promise<AsyncIterable<Buffer>> {
    let out;
    try {
      out = await this.client.send(new (s3Sdk().GetObjectCommand)({ Bucket: this.bucket, Key: this.key, Range: `bytes=${start}-${end}`, IfMatch: pinned.etag }), { abortSignal: signal });
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.$metadata?.httpStatusCode === 412 || e.name === 'PreconditionFailed') {
        throw new SourceChangedError(`the object changed during the copy (its ETag is no longer ${pinned.etag})`);
      }
      if (e.$metadata?.httpStatusCode === 404) throw new SourceChangedError('the object was deleted during the copy');
      throw err;
    }
    const body = out.Body as unknown as AsyncIterable<Buffer> & { destroy(): void };
    if (pinned.etag && out.ETag && out.ETag !== pinned.etag) {
      body.destroy();
      throw new SourceChangedError(`the object's ETag changed from ${pinned.etag} to ${out.ETag} during the copy`);
    }
    const cr = parseContentRange(out.ContentRange);
    if (!cr || cr.start !== start || cr.end !== end || (cr.total !== undefined && cr.total !== pinned.size)) {
      body.destroy();
      if (cr?.total !== undefined && cr.total !== pinned.size) throw new SourceChangedError(`the object's size changed from ${pinned.size} to ${cr.total} bytes`);
      throw new SourceHttpError(206, `the store answered ${out.ContentRange ?? 'no Content-Range'} to bytes=${start}-${end}`);
    }
    return body;
  }
}
