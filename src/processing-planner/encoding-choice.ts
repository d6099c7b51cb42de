/** Which codec, container and pixel format the output gets (an encoding profile, the options, the source). */
import { CODEC_PIXELS, DEFAULT_CONTAINER, ENCODER_OF, PROFILE_SPECS, pixFmtName, type PixelSpec, type ProfileSpec } from './encoders';
import { CONTAINER_CODECS, type BitDepth, type ChromaSubsampling, type Codec, type MediaContainer, type OutputCodec } from './options';
import type { PlanBuilder } from './plan-builder';
import { throwIssues } from './validate';

export interface Encoding {
  codec: OutputCodec;
  container: MediaContainer;
  pixel: PixelSpec;
  profile?: ProfileSpec;
  codecExplicit: boolean;
}

export function resolveEncoding(b: PlanBuilder): Encoding {
  const { options, src, caps } = b;
  const outProfile = options.processingSettings?.outputColorSpaceConversion;
  // The profile's HDR format decides codec and pixel format only where the profile leads.
  const leads = outProfile?.mappingMode === 'STRICT_USER' || outProfile?.mappingMode === 'USER_PRIORITY';
  const hdrFormat = leads ? outProfile?.colorProfile?.hdrFormat : undefined;
  if (options.encodingProfile) {
    const profile = PROFILE_SPECS[options.encodingProfile];
    const container = options.container ?? (src.container && CONTAINER_CODECS[src.container].includes(profile.codec) ? src.container : DEFAULT_CONTAINER[profile.codec]);
    if (options.encodingConfiguration) {
      b.note(
        'encodingConfiguration',
        JSON.stringify(options.encodingConfiguration),
        'ignored',
        `encodingProfile ${options.encodingProfile} fixes codec, pixel format and bitrate; encodingConfiguration is ignored (contract rule)`,
      );
    }
    return { codec: profile.codec, container, pixel: { ...profile.pixel }, profile, codecExplicit: true };
  }
  const ec = options.encodingConfiguration ?? {};
  let codec: Codec;
  const codecExplicit = !!ec.codec;
  if (ec.codec) codec = ec.codec;
  else {
    const keep = src.codec;
    const fits = (c: Codec) => (!options.container || CONTAINER_CODECS[options.container].includes(c)) && caps.encoders.has(ENCODER_OF[c]);
    codec = hdrFormat === 'HDR10' ? 'HEVC' : keep && fits(keep) ? keep : 'H264';
  }
  const container = options.container ?? (src.container && CONTAINER_CODECS[src.container].includes(codec) ? src.container : DEFAULT_CONTAINER[codec]);
  if (!CONTAINER_CODECS[container].includes(codec)) {
    b.issues.add(
      'CONTAINER_IS_NOT_SUPPORTED_FOR_SELECTED_CODEC',
      'container',
      `${container} cannot hold ${codec} (chosen because hdrFormat HDR10 needs HEVC); it holds ${CONTAINER_CODECS[container].join(', ')}`,
      container,
    );
    throwIssues(b.issues);
  }
  const can = CODEC_PIXELS[codec];
  let pixel: PixelSpec;
  if (ec.pixelFormat) {
    pixel = { yuv: ec.pixelFormat.yuv ?? '4:2:0', bitDepth: ec.pixelFormat.bitDepth ?? 8 };
    if (!codecExplicit && (!can.yuv.includes(pixel.yuv) || !can.bitDepth.includes(pixel.bitDepth))) {
      b.issues.unsupported(
        'encodingConfiguration.pixelFormat',
        `the codec kept from the source (${codec}) cannot be ${pixel.yuv} ${pixel.bitDepth}-bit here (${can.why}); set encodingConfiguration.codec`,
        pixelFmtText(pixel),
      );
      throwIssues(b.issues);
    }
  } else {
    // Inherit the source's pixel format, adjusted to what the codec (and an HDR output) needs.
    let want: PixelSpec = { ...src.pixel };
    if (codec === 'XDCAM') want = { yuv: '4:2:2', bitDepth: 8 };
    if (hdrFormat === 'HDR10') want = { yuv: '4:2:0', bitDepth: 10 };
    else if (hdrFormat === 'PQ10' || hdrFormat === 'HLG') want = { ...want, bitDepth: 10 };
    pixel = nearestPixel(want, can);
    if (pixel.yuv !== want.yuv || pixel.bitDepth !== want.bitDepth) {
      b.note('encodingConfiguration.pixelFormat', `source ${pixelFmtText(src.pixel)}`, pixFmtName(pixel), `${codec} cannot keep ${pixelFmtText(want)} here (${can.why}); the nearest it can is used`);
    }
  }
  return { codec, container, pixel, codecExplicit };
}

function pixelFmtText(p: PixelSpec): string {
  return `${p.yuv} ${p.bitDepth}-bit`;
}

function nearestPixel(want: PixelSpec, can: { yuv: readonly ChromaSubsampling[]; bitDepth: readonly BitDepth[] }): PixelSpec {
  const chromaOrder: ChromaSubsampling[] = ['4:2:0', '4:2:2', '4:4:4'];
  const yuv = can.yuv.includes(want.yuv) ? want.yuv : ([...can.yuv].filter((c) => chromaOrder.indexOf(c) <= chromaOrder.indexOf(want.yuv)).pop() ?? can.yuv[0]!);
  const below = can.bitDepth.filter((d) => d <= want.bitDepth);
  const bitDepth = can.bitDepth.includes(want.bitDepth) ? want.bitDepth : below.length ? below[below.length - 1]! : can.bitDepth[0]!;
  return { yuv, bitDepth };
}
