/** Output pictures the limits, the encoder or the muxer refuse: size, fixed frame sizes, MXF frame rates. */
import { DNXHR_MIN_SIZE, MPEG2_MAX_SIDE, MXF_FRAME_RATES, dnxhdFrameSizes, xdcamFrameSizes } from './encoders';
import type { Encoding } from './encoding-choice';
import { num } from './ffmpeg-syntax';
import { LIMITS } from './options';
import type { Geometry, PlanBuilder } from './plan-builder';
import { rstr, value, type Rational } from './rational';
import { throwIssues } from './validate';

export function checkOutputSize(b: PlanBuilder, g: Geometry, enc: Encoding, interlaced: boolean): void {
  if (g.width < LIMITS.minWidth || g.width > LIMITS.maxWidth || g.height < LIMITS.minHeight || g.height > LIMITS.maxHeight) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      'filters',
      `the output would be ${g.width}x${g.height}; it must be within ${LIMITS.minWidth}..${LIMITS.maxWidth} x ${LIMITS.minHeight}..${LIMITS.maxHeight}`,
      `${g.width}x${g.height}`,
    );
    return;
  }
  if (enc.codec === 'DNXHD') {
    const sizes = dnxhdFrameSizes(enc.profile!.mbps!, enc.pixel.bitDepth as 8 | 10);
    if (!sizes.some((s) => s.width === g.width && s.height === g.height && s.interlaced === interlaced)) {
      const list = sizes.map((s) => `${s.width}x${s.height}${s.interlaced ? 'i' : 'p'}`).join(', ') || 'none';
      b.issues.add(
        'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
        'encodingProfile',
        `DNxHD has fixed frame sizes; ${b.options.encodingProfile} takes ${list}, the output would be ${g.width}x${g.height}${interlaced ? 'i' : 'p'} (scale to one of them, or use a DNxHR profile, which takes any size)`,
        b.options.encodingProfile,
      );
    }
  }
  if (enc.codec === 'DNXHR' && (g.width < DNXHR_MIN_SIZE.width || g.height < DNXHR_MIN_SIZE.height)) {
    b.issues.add(
      'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
      'encodingProfile',
      `DNxHR frames are at least ${DNXHR_MIN_SIZE.width}x${DNXHR_MIN_SIZE.height}; the output would be ${g.width}x${g.height} (scale it up, or use another codec)`,
      b.options.encodingProfile,
    );
  }
  if (enc.codec === 'XDCAM') {
    const sizes = xdcamFrameSizes(enc.pixel.yuv);
    if (!sizes.some((s) => s.width === g.width && s.height === g.height)) {
      b.issues.add(
        'TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE',
        'encodingConfiguration.codec',
        `XDCAM HD${enc.pixel.yuv === '4:2:2' ? '422' : ''} takes ${sizes.map((s) => `${s.width}x${s.height}`).join(', ')}; the output would be ${g.width}x${g.height}`,
        'XDCAM',
      );
    }
  }
  if ((enc.codec === 'MPEG2' || enc.codec === 'XDCAM') && (g.width > MPEG2_MAX_SIDE || g.height > MPEG2_MAX_SIDE)) {
    b.issues.add('TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'encodingConfiguration.codec', `MPEG-2 cannot code frames of 4096 pixels or more; the output would be ${g.width}x${g.height}`, enc.codec);
  }
  if (interlaced && enc.pixel.yuv === '4:2:0' && g.height % 4 !== 0) {
    b.issues.add('TARGET_RESOLUTION_OUT_OF_ALLOWED_RANGE', 'processingSettings.outputScanning', `interlaced 4:2:0 needs a height divisible by 4; the output would be ${g.height} high`, g.height);
  }
}

/** Throws when the output goes into MXF at a frame rate its muxer does not write. */
export function checkMxfFrameRate(b: PlanBuilder, enc: Encoding, outFps: Rational): void {
  if (enc.container === 'MXF' && !MXF_FRAME_RATES.some((r) => r.num * outFps.den === outFps.num * r.den)) {
    b.issues.unsupported(
      'container',
      `ffmpeg's MXF muxer writes only the SMPTE frame rates (23.976, 24, 25, 29.97, 30, 48, 50, 59.94, 60, 72, 75, 90, 96, 100, 119.88 and 120 frames/s); the output would be ${num(value(outFps), 3)} frames/s (${rstr(outFps)})`,
      'MXF',
    );
    throwIssues(b.issues);
  }
}
