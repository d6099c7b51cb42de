/**
 * A byte-range source over an object in platform storage, for the copy engine (video out copies
 * a stored video to a customer's bucket): `probe()` is the object's stat, `openRange()` a ranged
 * read. Stored video files never change after they land, so the size is the only thing pinned;
 * an object whose size differs from the pinned one fails the copy with SourceChangedError.
 */
import { RangeSource, SourceChangedError, SourceInfo } from '../net/https-range-source';
import { BlobNotFoundError, BlobStore } from './blob-store';

export class BlobRangeSource implements RangeSource {
  constructor(
    private readonly blobs: BlobStore,
    private readonly key: string,
  ) {}

  async probe(): Promise<SourceInfo> {
    const stat = await this.blobs.stat(this.key);
    if (!stat) throw new BlobNotFoundError(this.key);
    return { size: stat.size, etag: stat.etag };
  }

  async openRange(start: number, end: number, pinned: SourceInfo): Promise<AsyncIterable<Buffer>> {
    if (end >= pinned.size) throw new SourceChangedError(`bytes ${start}-${end} are outside the ${pinned.size} bytes of ${this.key}`);
    return (await this.blobs.read(this.key, { start, end })) as AsyncIterable<Buffer>;
  }
}
