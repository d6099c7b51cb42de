/**
 * @aws-sdk/client-s3, loaded on first use: only S3 platform storage (VIDMILL_STORAGE=s3) and
 * bucket locations, video-in and video-out need it, and loading it costs a tenth of a second of
 * start-up and about 20 MB of memory in every process that never touches a bucket. Code that uses
 * the SDK imports its types with `import type` and its values through `s3Sdk()`.
 */
import type * as S3 from '@aws-sdk/client-s3';

let sdk: typeof S3 | undefined;

export function s3Sdk(): typeof S3 {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a synchronous load on first use, so callers stay as they are
  return (sdk ??= require('@aws-sdk/client-s3') as typeof S3);
}
