/** The platform BlobStore chosen by configuration (VIDMILL_STORAGE). */
import type { BlobStore } from './blob-store';
import { LocalDiskStore } from './local-disk-store';
import { S3BlobStore } from './s3-blob-store';

/** Platform storage: a folder on local disk (the embedded default) or an S3-compatible bucket. */
export type StorageConfig = { kind: 'disk'; root: string } | { kind: 's3'; bucket: string; endpoint?: string; region: string; accessKey: string; secretKey: string; forcePathStyle: boolean };

export function createBlobStore(storage: StorageConfig): BlobStore {
  return storage.kind === 's3' ? new S3BlobStore(storage) : new LocalDiskStore(storage.root);
}
