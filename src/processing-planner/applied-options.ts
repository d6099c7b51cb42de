/**
 * The options as applied (`processing.appliedOptions`): a copy of the request that each stage
 * corrects as it goes (a deinterlacer that does not run, a crop rectangle as cut, settings of a
 * stage that is off dropped), finished with the encoding, scanning and colour actually used.
 */
import type { Scanning } from '../media';
import type { InputColour, OutputColour } from './colour-conversion';
import { readPixelFormat } from './encoders';
import type { Encoding } from './encoding-choice';
import type { Codec, MediaContainer, ProcessingOptions } from './options';
import type { PlanBuilder } from './plan-builder';

export function setFilter(o: ProcessingOptions, stage: keyof NonNullable<ProcessingOptions['filters']>, v: null): void {
  o.filters = { ...(o.filters ?? {}), [stage]: v };
}

export function setSetting<K extends keyof NonNullable<ProcessingOptions['filterSettings']>>(o: ProcessingOptions, key: K, v: NonNullable<ProcessingOptions['filterSettings']>[K]): void {
  o.filterSettings = { ...(o.filterSettings ?? {}), [key]: v };
}

export function dropSetting(o: ProcessingOptions, keys: (keyof NonNullable<ProcessingOptions['filterSettings']>)[]): void {
  if (!o.filterSettings) return;
  for (const k of keys) delete o.filterSettings[k];
  if (!Object.keys(o.filterSettings).length) delete o.filterSettings;
}

export function finishApplied(b: PlanBuilder, enc: Encoding, container: MediaContainer, scanning: Scanning, bitrate: number | undefined, oc: OutputColour, ic: InputColour): void {
  const a = b.applied;
  const f = a.filters ?? {};
  // Filters that are off: remove their settings (contract: ignored).
  if (!f.deinterlacer) dropSetting(a, ['interlacedFieldOrderMode']);
  if (a.filters) {
    for (const k of Object.keys(a.filters) as (keyof typeof f)[]) if (a.filters[k] === undefined) delete a.filters[k];
  }
  a.container = container;
  if (a.encodingProfile) delete a.encodingConfiguration;
  else {
    a.encodingConfiguration = {
      codec: enc.codec as Codec,
      pixelFormat: { yuv: enc.pixel.yuv, bitDepth: enc.pixel.bitDepth, name: readPixelFormat(enc.codec, enc.pixel, oc.color.colorRange === 'FULL').name },
      ...(bitrate !== undefined && (enc.codec !== 'H264' && enc.codec !== 'HEVC' ? true : !!b.options.encodingConfiguration?.bitrate) ? { bitrate } : {}),
    };
  }
  a.processingSettings = { ...(a.processingSettings ?? {}), outputScanning: scanning };
  const inConv = a.processingSettings.inputColorSpaceConversion;
  if (inConv) {
    inConv.colorProfile = { ...(inConv.colorProfile ?? {}), ...ic.input };
    inConv.metadataOnly = inConv.metadataOnly ?? false;
    if (inConv.toneMapper) {
      if (ic.toneMap) inConv.toneMapper = { algorithm: inConv.toneMapper.algorithm, outputNits: ic.toneMap.outputNits };
      else delete inConv.toneMapper;
    }
  }
  const outConv = a.processingSettings.outputColorSpaceConversion;
  if (outConv) {
    outConv.colorProfile = { ...(outConv.mappingMode === 'RESOLUTION_ONLY' ? {} : (outConv.colorProfile ?? {})), ...oc.color };
    outConv.metadataOnly = outConv.metadataOnly ?? false;
    if (outConv.inverseToneMapper && !oc.inverse) delete outConv.inverseToneMapper;
  }
}
