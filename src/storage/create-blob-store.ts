/** The platform BlobStore chosen by configuration (VIDMILL_STORAGE). */
import type { StorageConfig } from '../config';
import type { BlobStore } from './blob-store';
import { LocalDiskStore } from './local-disk-store';
import { S3BlobStore } from './s3-blob-store';

export function createBlobStore(storage: StorageConfig): BlobStore {
  return storage.kind === 's3' ? new S3BlobStore(storage) : new LocalDiskStore(storage.root);
}
