/**
 * Everything after the video map in the processing pass: the audio and the streams left out,
 * the video encoder and its rate control (per codec), HDR10 static metadata, the pixel format,
 * the colour tags, the cut to the range and the muxer.
 */
import type { Scanning } from '../media';
import { FF_PRIMARIES, FF_RANGE, FF_SPACE, FF_TRANSFER, type ColorSpec } from './colour';
import type { InputColour, OutputColour } from './colour-conversion';
import { CONTAINER_FORMAT, ENCODER_OF, audioArgs, xdcamBitrate } from './encoders';
import type { Encoding } from './encoding-choice';
import { secondsArg } from './ffmpeg-syntax';
import { resolveHdrStatic, x265HdrParams, type HdrStaticMetadata } from './hdr-metadata';
import type { MediaContainer } from './options';
import type { Geometry, PlanBuilder } from './plan-builder';
import type { X26xPreset } from './plan-types';
import { value, type Rational } from './rational';
import { throwIssues } from './validate';

/** Quality targets when no bitrate is given. */
export const DEFAULT_CRF = { H264: 20, HEVC: 22 } as const;
/** MPEG-2 without a bitrate: 0.4 bits per pixel (about 4 Mbit/s for PAL SD, 21 Mbit/s for 1080p25). */
export const MPEG2_AUTO_BITS_PER_PIXEL = 0.4;

export interface OutputArgsInput {
  enc: Encoding;
  /** The picture at the end of the graph, and its stored frame rate and pixel format. */
  g: Geometry;
  outFps: Rational;
  pixFmt: string;
  outputScanning: Scanning;
  inputColour: InputColour;
  outputColour: OutputColour;
  preset: X26xPreset;
  durationS: number;
}

export interface OutputArgs {
  args: string[];
  /** The same arguments in their three parts (segmented processing uses them apart): streams (audio or `-an`, no subtitles or data), the video encoder with pixel format and colour tags, the cut and the muxer. */
  parts: { streams: string[]; video: string[]; muxer: string[] };
  /** Target bitrate in bits/s when the encoder has one (explicit, automatic or fixed by the profile). */
  bitrate?: number;
  /** A constant-quality target instead of a bitrate: libx264/libx265 CRF. */
  crf?: number;
  /** HDR10 static metadata written into the stream. */
  hdr?: HdrStaticMetadata;
}

/** The output arguments, in order; adds the encoder's work to the estimate. */
export function planOutputArgs(b: PlanBuilder, x: OutputArgsInput): OutputArgs {
  const { enc, g, outFps } = x;
  const streams = streamArgs(b.src.hasAudio, enc);
  const hdr = resolveOutputHdr(b, enc, x.inputColour, x.outputColour);
  const video = videoEncoderArgs(b, x, hdr);
  b.work.push({ key: video.encoderKey, pixelsPerSecond: g.width * g.height * value(outFps) });
  const videoArgs = [...video.args, '-pix_fmt', x.pixFmt, ...colourTagArgs(x.outputColour.color)];
  const muxer = muxerArgs(enc.container, x.durationS);
  return {
    args: [...streams, ...videoArgs, ...muxer],
    parts: { streams, video: videoArgs, muxer },
    ...(video.bitrate !== undefined ? { bitrate: video.bitrate } : {}),
    ...(video.crf !== undefined ? { crf: video.crf } : {}),
    ...(hdr ? { hdr } : {}),
  };
}

/** The first audio stream when the source has one (encoded for the container), no subtitles or data. */
function streamArgs(hasAudio: boolean, enc: Encoding): string[] {
  const args: string[] = [];
  if (hasAudio) args.push('-map', '0:a?', ...audioArgs(enc.container, enc.codec).args);
  else args.push('-an');
  args.push('-sn', '-dn');
  return args;
}

/** HDR10 static metadata: the user's, else the source's while the picture stays PQ. HEVC only. */
function resolveOutputHdr(b: PlanBuilder, enc: Encoding, inputColour: InputColour, outputColour: OutputColour): HdrStaticMetadata | undefined {
  const hdr = resolveHdrStatic({
    profile: outputColour.profile,
    outputTransfer: outputColour.color.transferCharacteristics,
    codec: enc.codec,
    bitDepth: enc.pixel.bitDepth,
    source: b.src.hdr10,
    pqThroughout: inputColour.input.transferCharacteristics === 'SMPTE2084' && !inputColour.toneMap && !outputColour.inverse,
  });
  for (const n of hdr.notes) b.note(n.field, n.requested, n.appliedAs, n.note);
  if (hdr.metadata && enc.codec !== 'HEVC') {
    b.issues.unsupported(
      'processingSettings.outputColorSpaceConversion.colorProfile',
      `HDR static metadata is written into HEVC only (x265 SEI); the output codec is ${enc.codec} (set encodingConfiguration.codec to HEVC)`,
    );
    throwIssues(b.issues);
  }
  return hdr.metadata;
}

/** The video encoder, its rate control and field flags; `encoderKey` names it for the estimate. */
function videoEncoderArgs(b: PlanBuilder, x: OutputArgsInput, hdr: HdrStaticMetadata | undefined): { args: string[]; encoderKey: string; bitrate?: number; crf?: number } {
  const { enc, g, preset } = x;
  const container = enc.container;
  const outInterlaced = x.outputScanning !== 'PROGRESSIVE';
  const args: string[] = [];
  let bitrate: number | undefined;
  let crf: number | undefined;
  let encoderKey: string = ENCODER_OF[enc.codec];
  const interlaceFlags = outInterlaced ? ['-flags', '+ildct+ilme'] : [];
  const explicitBitrate = b.options.encodingProfile ? undefined : b.options.encodingConfiguration?.bitrate;
  switch (enc.codec) {
    case 'H264':
    case 'HEVC': {
      encoderKey = `${ENCODER_OF[enc.codec]}:${preset}`;
      args.push('-c:v', ENCODER_OF[enc.codec], '-preset', preset);
      if (explicitBitrate) {
        bitrate = explicitBitrate;
        args.push('-b:v', String(bitrate), '-maxrate', String(Math.round(bitrate * 1.5)), '-bufsize', String(bitrate * 2));
      } else {
        crf = DEFAULT_CRF[enc.codec];
        args.push('-crf', String(crf));
      }
      // x264 writes the field order into the stream only when it is set at the start
      // (ffmpeg's per-frame switch comes too late for the SPS/SEI readers see first).
      if (enc.codec === 'H264') {
        if (outInterlaced) args.push(...interlaceFlags, '-x264-params', x.outputScanning === 'INTERLACED_TOP_FIRST' ? 'tff=1' : 'bff=1');
        // ffmpeg's MXF muxer writes H.264 packets without their reordering (B-frames): the file's
        // presentation times come out in decode order (0, 0.12, 0.08, ...). No B-frames there.
        if (container === 'MXF') args.push('-bf', '0');
        // The MOV muxer tags 10-bit H.264 of AVC-Intra sizes as AVC-Intra (4:2:0 at 960x720 and
        // 1440x1080: ai5q...; 4:2:2 at 1280x720 and 1920x1080: ai1q...), whose readers ignore the
        // stream's own parameter sets: 960x720 High 10 was read as High 10 Intra, full range, and
        // 1280x720 High 4:2:2 as High 4:2:2 Intra, with decoding errors. Always the plain AVC sample entry.
        // ffmpeg's MOV muxer re-chooses the H.264 entry at the default strictness (-tag:v is not
        // enough there): `-strict unofficial` lets it keep avc1.
        if (container === 'MP4') args.push('-tag:v', 'avc1');
        if (container === 'MOV') args.push('-tag:v', 'avc1', '-strict', 'unofficial');
      } else {
        args.push('-x265-params', ['log-level=error', ...(hdr ? x265HdrParams(hdr) : [])].join(':'));
        if (container === 'MP4' || container === 'MOV') args.push('-tag:v', 'hvc1');
      }
      break;
    }
    case 'MPEG2': {
      bitrate = explicitBitrate ?? Math.round((MPEG2_AUTO_BITS_PER_PIXEL * g.width * g.height * value(g.fps)) / 1000) * 1000;
      args.push(
        '-c:v',
        'mpeg2video',
        '-b:v',
        String(bitrate),
        '-maxrate',
        String(Math.round(bitrate * 1.5)),
        '-bufsize',
        String(Math.max(1_835_008, bitrate)),
        '-g',
        '15',
        '-bf',
        '2',
        ...interlaceFlags,
      );
      break;
    }
    case 'XDCAM': {
      bitrate = xdcamBitrate(enc.pixel.yuv);
      const cbr = enc.pixel.yuv === '4:2:2' ? ['-minrate', String(bitrate)] : [];
      args.push(
        '-c:v',
        'mpeg2video',
        '-b:v',
        String(bitrate),
        ...cbr,
        '-maxrate',
        String(bitrate),
        '-bufsize',
        '17825792',
        '-rc_init_occupancy',
        '17825792',
        '-g',
        '12',
        '-bf',
        '2',
        '-intra_vlc',
        '1',
        '-non_linear_quant',
        '1',
        '-dc',
        '10',
        '-qmin',
        '1',
        '-qmax',
        '12',
        '-sc_threshold',
        '1000000000',
        ...interlaceFlags,
      );
      break;
    }
    case 'FFV1':
      args.push('-c:v', 'ffv1', '-level', '3', '-g', '1', '-slices', '4', '-slicecrc', '1');
      break;
    case 'PRORES':
    case 'DNXHD':
    case 'DNXHR': {
      const spec = enc.profile!;
      args.push('-c:v', ...spec.args);
      if (spec.mbps) bitrate = spec.mbps * 1_000_000;
      if (outInterlaced) args.push('-flags', '+ildct');
      break;
    }
  }
  return { args, encoderKey, ...(bitrate !== undefined ? { bitrate } : {}), ...(crf !== undefined ? { crf } : {}) };
}

function colourTagArgs(c: ColorSpec): string[] {
  return ['-color_primaries', FF_PRIMARIES[c.colorPrimaries], '-color_trc', FF_TRANSFER[c.transferCharacteristics], '-colorspace', FF_SPACE[c.colorSpace], '-color_range', FF_RANGE[c.colorRange]];
}

/** The output is cut to the range (frame-rate converters may run a frame past it), then the container's muxer. */
export function muxerArgs(container: MediaContainer, durationS: number): string[] {
  const args = ['-t', secondsArg(durationS), '-max_muxing_queue_size', '4096'];
  if (container === 'MP4' || container === 'MOV') args.push('-movflags', '+faststart+write_colr');
  args.push('-f', CONTAINER_FORMAT[container].muxer);
  return args;
}
