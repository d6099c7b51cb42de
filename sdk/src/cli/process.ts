/**
 * `vidmill process <videoId> --preset <configuration> | --options file.json`: appraises the job,
 * shows its price, asks for confirmation (unless `--yes`), accepts, then shows progress until
 * the new video's processing is done.
 */
import { promises as fs } from 'node:fs';
import type { Command } from 'commander';
import { unwrap } from '../client';
import type { components } from '../generated/api';
import { action, checkInterrupted, fields, formatBytes, formatDuration, positiveInt, table, UsageError, type Context } from './context';
import { waitForStage } from './wait';

type Configuration = components['schemas']['VideoProcessingConfiguration'];
type Options = components['schemas']['VideoProcessingConfigurationOptions'];
type Appraisal = components['schemas']['VideoProcessingAppraisal'];

/** The built-in configurations every server has (src/processing-planner/built-ins.ts; a test keeps the two lists equal). */
export const BUILT_IN_PRESETS = ['Upscale to Full HD', 'Upscale to 4K', 'Convert to HEVC MP4', 'Compress H.264', 'ProRes 422 HQ MOV', 'DNxHR HQ MXF', 'Deinterlace and denoise an SD archive'] as const;

/** `Upscale to Full HD` -> `upscale-to-full-hd`. */
export const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** The configuration (built-in or the team's own) named by id, name (any case) or the slug of its name. */
async function findConfiguration(ctx: Context, preset: string): Promise<Configuration> {
  const all: Configuration[] = [];
  for (let pageNumber = 0; ; pageNumber++) {
    const page = unwrap(await ctx.client.api.GET('/v1/processing-configurations', { params: { query: { pageNumber, pageSize: 100, builtInMode: 'INCLUDE' } } }));
    all.push(...page.items);
    if (pageNumber + 1 >= page.totalPages) break;
  }
  const wanted = preset.trim().toLowerCase();
  const found = all.find((c) => c.id === preset) ?? all.find((c) => c.name.toLowerCase() === wanted) ?? all.find((c) => slug(c.name) === slug(preset));
  if (!found) {
    const list = all.map((c) => `  ${slug(c.name).padEnd(40)} ${c.name}${c.builtin ? ' (built-in)' : ''}`).join('\n');
    throw new UsageError(`No processing configuration "${preset}". Available:\n${list}`);
  }
  return found;
}

/** The price lines of an appraisal, for people. */
export function describeAppraisal(appraisal: Appraisal): string {
  const a = appraisal.video.processingJobAppraisal;
  if (!a) return `Appraisal ${appraisal.appraisalId} (no price given)`;
  const head: Array<[string, unknown]> = [
    ['appraisal', appraisal.appraisalId],
    ['expires', appraisal.expiresAt],
    ['output', `${formatDuration(a.outputDurationMillis / 1000)}, about ${formatBytes(a.estimation.fileSize)}, ${formatDuration(a.estimation.totalComputeTimeSeconds)} of compute`],
  ];
  if (a.billingType === 'WALLET') {
    const c = a.cost;
    const usd = (n: number) => `${n.toFixed(3)} USD`;
    return [
      fields([
        ...head,
        ['processing', `${usd(c.totalProcessingCostUsd)}${c.discountPercentage ? ` (${c.discountPercentage}% off ${usd(c.totalNormalProcessingCostUsd)})` : ''}`],
        ['storage', `${usd(c.estimatedStorageCostUsd)} per month (estimate)`],
        ['download', `${usd(c.estimatedDownloadCostUsd)} per download (estimate)`],
      ]),
      table(
        ['PRODUCT', 'AMOUNT', 'UNIT PRICE', 'COST'],
        a.jobItems.map((i) => [i.productName, `${i.amount} ${i.amountUnit}`, usd(i.unitPriceUsd), usd(i.costUsd)]),
      ),
      `Price: ${usd(c.totalProcessingCostUsd)} (US dollars, charged to the team's wallet when accepted)`,
    ].join('\n');
  }
  const c = a.cost;
  return [
    fields([
      ...head,
      ['processing', `${c.totalProcessingCostCredits} credits`],
      ['storage', `${c.estimatedStorageCostCredits} credits per month (estimate)`],
      ['download', `${c.estimatedDownloadCostCredits} credits per download (estimate)`],
    ]),
    table(
      ['PRODUCT', 'AMOUNT', 'COST'],
      a.jobItems.map((i) => [i.productName, `${i.amount} ${i.amountUnit}`, `${i.costCredits} credits`]),
    ),
    `Price: ${c.totalProcessingCostCredits} credits (cloud-marketplace credits, billed through the team's agreement when accepted)`,
  ].join('\n');
}

/** The question before accepting: what is charged, in which unit, and (for a wallet) the balance it comes from. */
export function acceptQuestion(appraisal: Appraisal, walletBalanceUsd: number | undefined): string {
  const a = appraisal.video.processingJobAppraisal;
  if (!a) return 'Accept this appraisal and start processing?';
  if (a.billingType === 'WALLET') {
    const price = a.cost.totalProcessingCostUsd;
    const balance = walletBalanceUsd === undefined ? '' : ` (processing balance ${walletBalanceUsd.toFixed(3)} USD, ${(walletBalanceUsd - price).toFixed(3)} USD after)`;
    return `Accept and charge ${price.toFixed(3)} USD to the team's wallet${balance}?`;
  }
  return `Accept and use ${a.cost.totalProcessingCostCredits} cloud-marketplace credits?`;
}

/** The processing balance of a wallet team in USD, or undefined (a marketplace team, or not readable). */
async function walletBalance(ctx: Context, appraisal: Appraisal): Promise<number | undefined> {
  if (appraisal.video.processingJobAppraisal?.billingType !== 'WALLET') return undefined;
  const res = await ctx.client.api.GET('/v2/wallet/financial-details', { params: { query: { selectTeamId: appraisal.video.teamId } } });
  return res.data?.processingCreditsBalanceUsd;
}

async function processCommand(ctx: Context, videoId: string, o: { preset?: string; options?: string; yes?: boolean; start?: number; end?: number; name?: string; wait?: boolean }) {
  if (Boolean(o.preset) === Boolean(o.options)) throw new UsageError('Give exactly one of --preset <configuration> and --options <file.json>');
  const range = { startPosMs: o.start, endPosMs: o.end };
  let appraisal: Appraisal;
  if (o.preset) {
    const conf = await findConfiguration(ctx, o.preset);
    ctx.info(`Configuration: ${conf.name} (${conf.id})`);
    appraisal = unwrap(await ctx.client.api.POST('/v1/videos/{videoId}/processing/appraisals/create/{confId}', { params: { path: { videoId, confId: conf.id }, query: range } }));
  } else {
    let options: Options;
    try {
      options = JSON.parse(await fs.readFile(o.options!, 'utf8')) as Options;
    } catch (err) {
      throw new UsageError(`Cannot read the options file ${o.options}: ${(err as Error).message}`);
    }
    appraisal = unwrap(await ctx.client.api.POST('/v1/videos/{videoId}/processing/appraisals/create', { params: { path: { videoId }, query: range }, body: options }));
  }
  // The price goes to stderr with --json (stdout holds the one result document).
  const balance = await walletBalance(ctx, appraisal);
  const priced = describeAppraisal(appraisal) + (balance === undefined ? '' : `\nWallet: ${balance.toFixed(3)} USD for processing`);
  if (ctx.json) ctx.info(priced);
  else process.stdout.write(priced + '\n');
  if (!o.yes) {
    if (!process.stdin.isTTY) throw new UsageError('Accepting needs --yes when there is no terminal to confirm on');
    if (!(await ctx.confirm(acceptQuestion(appraisal, balance)))) throw new UsageError('Not accepted: nothing was charged');
  }
  checkInterrupted(ctx.signal);
  const accepted = unwrap(
    await ctx.client.api.POST('/v1/videos/{videoId}/processing/appraisals/{appraisalId}/accept', {
      params: { path: { videoId, appraisalId: appraisal.appraisalId }, query: { videoName: o.name } },
    }),
  );
  ctx.info(`Accepted: processing into video ${accepted.videoId}`);
  if (o.wait === false) {
    ctx.result({ appraisal, accepted }, () => accepted.videoId);
    return;
  }
  try {
    const video = await waitForStage(ctx.client, accepted.videoId, 'processing', ctx.signal);
    ctx.result({ appraisal, video }, () => `${video.id}\tprocessing DONE, ingestion DONE`);
  } catch (err) {
    if (ctx.signal.aborted) ctx.info(`Stopped waiting; processing of video ${accepted.videoId} continues on the server.`);
    throw err;
  }
}

export function registerProcess(program: Command): void {
  program
    .command('process <videoId>')
    .description('Appraise processing of a video, show the price, confirm, accept and follow it until done')
    .option('--preset <configuration>', 'a built-in or saved configuration: its id, name or slug (e.g. compress-h-264)')
    .option('--options <file.json>', 'processing options as JSON (VideoProcessingConfigurationOptions)')
    .option('--start <ms>', 'start position in the source, in milliseconds', positiveInt('--start'))
    .option('--end <ms>', 'end position in the source, in milliseconds', positiveInt('--end'))
    .option('--name <name>', 'name of the new video')
    .option('-y, --yes', 'accept without asking')
    .option('--no-wait', 'return once accepted instead of following the progress')
    .addHelpText(
      'after',
      `\nPresets (--preset): the built-in configurations, by slug or name, and the team's saved ones (by id, name or slug):\n${BUILT_IN_PRESETS.map((name) => `  ${slug(name).padEnd(40)} ${name}`).join('\n')}\n\nWithout --no-wait it returns when the new video is processed and ingested, ready for download and compare.`,
    )
    .action(action(processCommand));
}
