/** Reads the pixel size of a JPEG or PNG from its header (no decoding). */
import { open } from 'node:fs/promises';

export interface ImageInfo {
  format: 'jpeg' | 'png';
  width: number;
  height: number;
}

export function imageInfo(buf: Buffer): ImageInfo | undefined {
  if (buf.length >= 24 && buf.readUInt32BE(0) === 0x89504e47 && buf.toString('latin1', 12, 16) === 'IHDR') {
    return { format: 'png', width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 9 < buf.length) {
    if (buf[i] !== 0xff) return undefined;
    const marker = buf[i + 1]!; // i + 9 < length
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    const length = buf.readUInt16BE(i + 2);
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { format: 'jpeg', height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
    }
    i += 2 + length;
  }
  return undefined;
}

/** The size of an image file (reads at most its first 256 KiB). */
export async function imageFileInfo(file: string): Promise<ImageInfo | undefined> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(256 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return imageInfo(buf.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}
