import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config';
import { DEFAULT_PRICE_LIST, microsToUsd, type ProductUse, usdToMicros } from '../../src/features/billing';
import { priceJob, priceUtility, roundToMills, unitPriceToUsd, volumeDiscountPercentage } from '../../src/features/billing/testing';
import { type JobAppraisal, toJobAppraisalDto } from '../../src/features/videos';
import { processingProducts } from '../../src/features/processing/testing';
import { FfmpegProcessingEngine } from '../../src/features/processing';
import type { ProcessingOptions } from '../../src/processing-planner';
import { probeOf } from '../processing/helpers';

/** The engine the service appraises with (no ffmpeg needed: planning and estimating are pure). */
const engine = new FfmpegProcessingEngine({
  get: async () => {
    throw new Error('planning needs no binaries');
  },
});

/** What appraising a job prices: the products of the real plan and estimate, priced. */
function appraiseJob(options: ProcessingOptions, source: { width: number; height: number; rate: string; durationMs: number }) {
  const probe = probeOf({ ...source, hasAudio: false });
  const range = { startMs: 0, endMs: source.durationMs };
  const plan = engine.plan(options as Record<string, unknown>, probe, range);
  const estimate = engine.estimate(plan, probe);
  const charge = processingProducts(options as Record<string, unknown>, plan, probe, estimate.gigapixels);
  return { charge, priced: priceJob(DEFAULT_PRICE_LIST, charge), estimate };
}

/** The appraisal as the API shows it to a wallet team. */
function walletView(priced: ReturnType<typeof priceJob>, charge: ProductUse[]) {
  const zero = { costMicros: 0, costCredits: 0 };
  const appraisal: JobAppraisal = {
    billingType: 'WALLET',
    estimation: { fileSize: 1, totalComputeTimeSeconds: 1 },
    outputDurationMillis: 1000,
    ...priced,
    storage: zero,
    download: zero,
    charge,
    notes: [],
    appliedOptions: { options: {}, output: {} },
  };
  return toJobAppraisalDto(JSON.parse(JSON.stringify(appraisal))) as any;
}

const mills = (usd: number) => Math.round(usd * 1000);

describe('Ledger money and pricing', () => {
  it('money: micro-USD inside, at most 3 decimals outside, whole mills booked', () => {
    assert.equal(usdToMicros(0.0075), 7500);
    assert.equal(roundToMills(12_345_499), 12_345_000);
    assert.equal(roundToMills(-1_234_567), -1_235_000);
    assert.equal(Object.is(roundToMills(-1), 0), true);
    assert.equal(microsToUsd(87_655_000), 87.655);
    assert.equal(microsToUsd(-297_000), -0.297);
    assert.equal(Object.is(microsToUsd(-400), 0), true);
    // no floating-point drift: a thousand 0.001 USD charges sum to exactly 1 USD
    assert.equal(microsToUsd(Array.from({ length: 1000 }, () => 1000).reduce((a, b) => a + b, 0)), 1);
  });

  it('volume discount grows with the gigapixels of a job up to the cap', () => {
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 0), 0);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 330), 8.25);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 1000), 25);
    assert.equal(volumeDiscountPercentage(DEFAULT_PRICE_LIST, 50_000), 25);
    const withBase = { ...DEFAULT_PRICE_LIST, volumeDiscount: { ...DEFAULT_PRICE_LIST.volumeDiscount, baseGp: 200 } };
    assert.equal(volumeDiscountPercentage(withBase, 10), 5);
  });

  it('a job is priced per product, discount on processing products only, rounded once and shared out over the products', () => {
    const job = priceJob(DEFAULT_PRICE_LIST, [
      { productName: 'Super-resolution 4x', category: 'FILTER', amount: 329 },
      { productName: 'H.264 / AVC', category: 'ENCODER', amount: 330 },
      { productName: 'Storage', category: 'STORAGE', amount: 12.4 },
    ]);
    assert.equal(job.gigapixels, 330);
    assert.equal(job.discountPercentage, 8.25);
    assert.deepEqual(
      job.products.map((p) => p.normalCostMicros),
      [9_870_000, 2_475_000, 298_000],
    );
    assert.deepEqual(
      job.products.map((p) => p.costMicros),
      [9_056_000, 2_271_000, 298_000],
    );
    assert.deepEqual(
      job.products.map((p) => p.discountPercentage),
      [8.25, 8.25, 0],
    );
    assert.equal(job.costMicros, 11_625_000);
    assert.equal(job.discountMicros, job.normalCostMicros - job.costMicros);
    assert.deepEqual(
      job.products.map((p) => p.costCredits),
      [987, 330, 38],
    );
    assert.throws(() => priceJob(DEFAULT_PRICE_LIST, [{ productName: 'Nope', category: 'ENCODER', amount: 1 }]), /No price/);
    assert.throws(() => priceJob(DEFAULT_PRICE_LIST, [{ productName: 'AV1', category: 'ENCODER', amount: -1 }]), /Invalid amount/);
  });

  it('a job is rounded once, up to the mill: a small job is never free, a Full HD one is not under-billed', () => {
    // 640x480, 4 s at 25 fps, H.264: 0.03072 GP, 0.00029184 USD exact; rounding each product
    // to the nearest mill made it free.
    const small = appraiseJob({ container: 'MP4', encodingConfiguration: { codec: 'H264' } }, { width: 640, height: 480, rate: '25:1', durationMs: 4000 });
    assert.equal(small.estimate.gigapixels, 0.03072);
    assert.equal(small.priced.costMicros, 1000);
    assert.deepEqual(
      small.priced.products.map((p) => [p.productName, p.costMicros]),
      [
        ['H.264 / AVC', 1000],
        ['Processing', 0],
      ],
    );
    // 1920x1080, 3 s at 25 fps: 0.15552 GP, 0.0014774 USD exact; rounding each product gave 0.001.
    const threeSeconds = appraiseJob({ container: 'MP4', encodingConfiguration: { codec: 'H264' } }, { width: 1920, height: 1080, rate: '25:1', durationMs: 3000 });
    assert.equal(threeSeconds.estimate.gigapixels, 0.15552);
    assert.equal(threeSeconds.priced.costMicros, 2000, 'rounded up once');
    const view = walletView(threeSeconds.priced, threeSeconds.charge);
    assert.equal(view.jobItems[0].unitPriceUsd, 0.0075, 'the unit price as the price list states it');
    assert.equal(unitPriceToUsd(threeSeconds.priced.products[0]!.unitPriceMicros), 0.0075, 'and the same in a transaction');
    assert.equal(view.cost.totalProcessingCostUsd, 0.002);
    assert.equal(priceJob(DEFAULT_PRICE_LIST, []).costMicros, 0, 'nothing consumed, nothing charged');
  });

  it('property: for any job (resolution, duration, codec, filters) the appraisal is what the charge books, its items add up, and nothing is free', () => {
    const options: fc.Arbitrary<ProcessingOptions> = fc
      .record({
        codec: fc.constantFrom('H264', 'HEVC', 'PRORES_422_HQ', 'FFV1'),
        deinterlace: fc.boolean(),
        denoise: fc.boolean(),
        scaler: fc.constantFrom(undefined, 'SCALE', 'DVRES2'),
        tag: fc.constantFrom('STANDARD_HD', 'FULL_HD', 'UHD_4K', '2X'),
      })
      .map(({ codec, deinterlace, denoise, scaler, tag }) => ({
        container: codec === 'PRORES_422_HQ' || codec === 'FFV1' ? 'MOV' : 'MP4',
        ...(codec === 'PRORES_422_HQ' ? { encodingProfile: codec } : { encodingConfiguration: { codec } }),
        filters: { ...(deinterlace ? { deinterlacer: 'BWDIF' } : {}), ...(denoise ? { denoiser: 'HQDN3D' } : {}), ...(scaler ? { scaler } : {}) },
        ...(scaler ? { filterSettings: { resolution: { tag } } } : {}),
      }));
    const source = fc.record({
      width: fc.integer({ min: 80, max: 1920 }).map((w) => w * 2),
      height: fc.integer({ min: 60, max: 1080 }).map((h) => h * 2),
      rate: fc.constantFrom('24:1', '25:1', '30000:1001', '50:1', '60:1'),
      durationMs: fc.integer({ min: 1000, max: 3 * 3600_000 }),
    });
    let checked = 0;
    fc.assert(
      fc.property(options, source, (opts, src) => {
        let job: ReturnType<typeof appraiseJob>;
        try {
          job = appraiseJob(opts, src);
        } catch (err) {
          if ((err as Error).name === 'ProcessingOptionsError') return; // options this source does not fit
          throw err;
        }
        checked++;
        const { priced, charge } = job;
        // The charge prices the products stored with the appraisal (JSON) with the same function.
        const booked = priceJob(DEFAULT_PRICE_LIST, JSON.parse(JSON.stringify(charge)));
        assert.deepEqual(booked, priced);
        // One rounding per job, up to the mill, never free.
        const exact = charge.reduce((s, u) => {
          const list = u.category === 'ENCODER' ? DEFAULT_PRICE_LIST.encoders : u.category === 'FILTER' ? DEFAULT_PRICE_LIST.filters : { Processing: DEFAULT_PRICE_LIST.processing };
          return s + u.amount * usdToMicros(list[u.productName]!.usd) * (1 - priced.discountPercentage / 100);
        }, 0);
        assert.equal(priced.costMicros % 1000, 0);
        assert.ok(priced.costMicros > 0, 'never free');
        assert.ok(priced.costMicros >= exact - 1e-6 && priced.costMicros < exact + 1000, `${priced.costMicros} for ${exact}`);
        // Items add up to the totals; each normal cost is its cost plus its discount.
        assert.equal(
          priced.products.reduce((s, p) => s + p.costMicros, 0),
          priced.costMicros,
        );
        assert.equal(
          priced.products.reduce((s, p) => s + p.normalCostMicros, 0),
          priced.normalCostMicros,
        );
        assert.ok(priced.products.every((p) => p.costMicros % 1000 === 0 && p.normalCostMicros >= p.costMicros && p.costMicros >= 0));
        assert.equal(
          priced.products.reduce((s, p) => s + p.costCredits, 0),
          priced.costCredits,
        );
        assert.equal(
          priced.costCredits,
          Math.ceil(
            charge.reduce(
              (s, u) =>
                s + u.amount * (u.category === 'PROCESSING' ? 1 : u.category === 'ENCODER' ? DEFAULT_PRICE_LIST.encoders[u.productName]!.credits : DEFAULT_PRICE_LIST.filters[u.productName]!.credits),
              0,
            ) - 1e-6,
          ),
        );
        // What the API shows: the same numbers, items adding up to the totals.
        const view = walletView(priced, charge);
        assert.equal(mills(view.cost.totalProcessingCostUsd), priced.costMicros / 1000);
        assert.equal(
          view.jobItems.reduce((s: number, i: any) => s + mills(i.costUsd), 0),
          mills(view.cost.totalProcessingCostUsd),
        );
        assert.equal(
          view.jobItems.reduce((s: number, i: any) => s + mills(i.normalCostUsd), 0),
          mills(view.cost.totalNormalProcessingCostUsd),
        );
        assert.equal(mills(view.cost.totalNormalProcessingCostUsd) - mills(view.cost.totalProcessingCostUsd), mills(view.cost.totalProcessingDiscountUsd));
        for (const [i, item] of view.jobItems.entries()) assert.equal(item.unitPriceUsd, unitPriceToUsd(priced.products[i]!.unitPriceMicros));
      }),
      { numRuns: 500 },
    );
    assert.ok(checked > 300, `only ${checked} of 500 generated jobs were plannable`);
  });

  it('a metered utility is priced to the nearest mill (a few bytes cost nothing), credits rounded up', () => {
    assert.equal(priceUtility(DEFAULT_PRICE_LIST, { productName: 'Storage', category: 'STORAGE', amount: 12.4 }).costMicros, 298_000);
    assert.equal(priceUtility(DEFAULT_PRICE_LIST, { productName: 'Download', category: 'DOWNLOAD_HTTPS', amount: 0.001 }).costMicros, 0);
    assert.equal(priceUtility(DEFAULT_PRICE_LIST, { productName: 'Download', category: 'DOWNLOAD_HTTPS', amount: 0.001 }).costCredits, 1);
    assert.throws(() => priceUtility(DEFAULT_PRICE_LIST, { productName: 'AV1', category: 'ENCODER', amount: 1 }), /Utilities/);
  });

  it('VIDMILL_PRICE_LIST_FILE replaces the price list; a bad file refuses to start', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vidmill-prices-'));
    const good = path.join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ ...DEFAULT_PRICE_LIST, storage: { usd: 0.02, credits: 2 } }));
    assert.equal(loadConfig({ VIDMILL_PRICE_LIST_FILE: good }).priceList.storage.usd, 0.02);
    assert.deepEqual(loadConfig({}).priceList, DEFAULT_PRICE_LIST);
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...DEFAULT_PRICE_LIST, storage: { usd: 0.0000001, credits: 1.5 } }));
    assert.throws(
      () => loadConfig({ VIDMILL_PRICE_LIST_FILE: bad }),
      (e: unknown) => e instanceof ConfigError && /storage/.test(e.message),
    );
    assert.throws(() => loadConfig({ VIDMILL_PRICE_LIST_FILE: path.join(dir, 'missing.json') }), ConfigError);
  });
});
