/** `vidmill videos upload|import|list|get|delete`. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { unwrap } from '../client';
import type { components } from '../generated/api';
import { fileResumeStore, uploadFile, UploadSessionUnreachableError } from '../upload-file';
import { checkInterrupted, CliError, EXIT, fields, formatBytes, positiveInt, table, UsageError, action, type Context } from './context';
import { createProgress, type Progress } from './progress';
import { stagesOf, waitForStage } from './wait';

type Video = components['schemas']['Video'];

/** master, clip or processed. */
function kindOf(v: Video): string {
  if (v.flags.isClip) return 'clip';
  if (v.flags.isMaster) return 'master';
  return 'processed';
}

/** The stage a video is in, for people: "ingestion IN_PROGRESS 40%", "ready". */
export function stateOf(v: Video): string {
  const s = stagesOf(v);
  for (const [name, st] of [
    ['video in', s.upload],
    ['processing', s.processing],
    ['ingestion', s.ingestion],
  ] as const) {
    if (st.status === 'FAILED') return `${name} FAILED${st.error?.errorCode ? ` (${st.error.errorCode})` : ''}`;
    if (st.status && st.status !== 'DONE') return `${name} ${st.status}${st.progressPercentage !== undefined ? ` ${st.progressPercentage}%` : ''}`;
  }
  return s.ingestion.status === 'DONE' ? 'ready' : 'stored';
}

function videoFields(v: Video): string {
  const s = stagesOf(v);
  const stage = (st: { status?: string; progressPercentage?: number; error?: { errorCode?: string; message?: string } }) =>
    st.status ? `${st.status}${st.progressPercentage !== undefined ? ` ${st.progressPercentage}%` : ''}${st.error ? ` ${st.error.errorCode}: ${st.error.message}` : ''}` : undefined;
  const meta = v.ingestion?.metadata;
  return fields([
    ['id', v.id],
    ['name', v.name],
    ['kind', kindOf(v)],
    ['state', stateOf(v)],
    ['project', v.projectId],
    ['team', v.teamId],
    ['created', v.createdAt],
    ['file', v.upload?.file ? `${v.upload.file.name} (${formatBytes(v.upload.file.size)}, ${v.upload.file.type})` : undefined],
    ['master', v.masterVideo?.id],
    ['video in', stage(s.upload)],
    ['ingestion', stage(s.ingestion)],
    ['processing', stage(s.processing)],
    ['duration', meta?.durationInMillis !== undefined ? `${meta.durationInMillis / 1000} s` : undefined],
    ['picture', meta?.frameWidth && meta.frameHeight ? `${meta.frameWidth}x${meta.frameHeight} ${meta.codecName ?? ''}`.trim() : undefined],
  ]);
}

/** A local file to read: a usage error (exit 2) naming the folder it was looked for in when it is not there. */
export async function localFile(file: string): Promise<string> {
  const absolute = path.resolve(file);
  let isFile: boolean;
  try {
    isFile = (await fs.stat(absolute)).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(code === 'ENOENT' ? `No such file: ${file} (looked for ${absolute})` : `Cannot read ${file}: ${(err as Error).message}`);
  }
  if (!isFile) throw new UsageError(`Not a file: ${file} (${absolute})`);
  return absolute;
}

async function uploadCommand(
  ctx: Context,
  file: string,
  o: { name?: string; project?: string; description?: string; fullIngestion?: boolean; team?: string; wait?: boolean; chunkSize?: number; restart?: boolean },
) {
  const absolute = await localFile(file);
  const client = ctx.client;
  let bar: Progress | undefined;
  const abort = new AbortController();
  const onInterrupt = () => abort.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onInterrupt, { once: true });
  let videoId: string | undefined;
  let resumed = false;
  try {
    const result = await uploadFile(client, absolute, {
      name: o.name,
      projectId: o.project,
      description: o.description,
      fullIngestion: o.fullIngestion,
      teamId: o.team,
      chunkSize: o.chunkSize,
      restart: o.restart,
      resumeStore: fileResumeStore(path.join(ctx.config.stateDir, 'uploads.json')),
      signal: abort.signal,
      onSession(session) {
        videoId = session.videoId;
        if (session.resumed) ctx.info(`Resuming the upload of video ${session.videoId}`);
        else ctx.info(`Uploading to video ${session.videoId}`);
        bar = createProgress({ label: 'upload', total: session.size, unit: 'bytes' });
      },
      onProgress: (sent) => bar?.update(sent),
    });
    resumed = result.resumed;
  } catch (err) {
    bar?.stop();
    bar = undefined;
    if (ctx.signal.aborted) {
      ctx.info(`Upload of video ${videoId ?? '(not started)'} interrupted; run the same command again to resume it.`);
      checkInterrupted(ctx.signal);
    }
    if (err instanceof UploadSessionUnreachableError) {
      const advice = err.resumed
        ? `Run the same command with --restart to start a new upload (a new video); video ${err.videoId} stays until you delete it (vidmill videos delete ${err.videoId}).`
        : `Ask the server's operator to check its public address; video ${err.videoId} waits for its file until the session expires.`;
      throw new CliError(EXIT.NETWORK, `${err.message}. ${advice}`, 'UPLOAD_SESSION_UNREACHABLE');
    }
    throw err;
  } finally {
    bar?.stop();
    ctx.signal.removeEventListener('abort', onInterrupt);
  }
  if (!videoId) throw new Error('upload finished without a video');
  const id = videoId;
  const video = o.wait ? await waitForStage(client, id, 'ingestion', ctx.signal) : unwrap(await client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId: id } } }));
  ctx.result(video, () => `${id}\t${video.name}\t${stateOf(video)}${resumed ? '\t(resumed)' : ''}`);
}

async function importCommand(ctx: Context, url: string, o: { name?: string; project?: string; description?: string; fileName?: string; fullIngestion?: boolean; team?: string; wait?: boolean }) {
  let name = o.name;
  if (!name) {
    let last: string | undefined;
    try {
      last = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? '');
    } catch {
      throw new UsageError(`Not a URL: ${url}`);
    }
    name = last || 'Imported video';
  }
  const started = unwrap(
    await ctx.client.api.POST('/v1/videos/in/https', {
      params: { query: { fullIngestion: o.fullIngestion, selectTeamId: o.team } },
      body: { url, name, projectId: o.project, description: o.description, fileName: o.fileName },
    }),
  );
  if (o.wait) {
    const video = await waitForStage(ctx.client, started.videoId, 'ingestion', ctx.signal);
    ctx.result(video, () => `${video.id}\t${video.name}\t${stateOf(video)}`);
  } else {
    ctx.result(started, () => `${started.videoId}\tvideo in ${started.upload.uploadState?.uploadStatus ?? 'INITIAL'}`);
  }
}

async function listCommand(ctx: Context, o: { page?: number; pageSize?: number; all?: boolean; project?: string; team?: string }) {
  const fetchPage = async (pageNumber: number) =>
    unwrap(
      await ctx.client.api.GET('/v1/videos', {
        params: { query: { pageNumber, pageSize: o.pageSize ?? (o.all ? 100 : 20), filterByProjectId: o.project, filterByTeamId: o.team, sortDirection: 'DESC' } },
      }),
    );
  let page = await fetchPage(o.page ?? 0);
  const items = [...page.items];
  if (o.all) {
    while (page.pageNumber + 1 < page.totalPages) {
      checkInterrupted(ctx.signal);
      page = await fetchPage(page.pageNumber + 1);
      items.push(...page.items);
    }
  }
  const doc = o.all ? { items, totalElements: items.length } : page;
  ctx.result(doc, () => {
    const rows = items.map((v) => [v.id, v.name, kindOf(v), stateOf(v), v.createdAt]);
    const footer = o.all ? `${items.length} videos` : `page ${page.pageNumber} of ${Math.max(page.totalPages, 1)} (${page.totalElements} videos; --page N or --all for more)`;
    return `${table(['ID', 'NAME', 'KIND', 'STATE', 'CREATED'], rows)}\n${footer}`;
  });
}

async function getCommand(ctx: Context, videoId: string) {
  const video = unwrap(await ctx.client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId } } }));
  ctx.result(video, () => videoFields(video));
}

async function deleteCommand(ctx: Context, videoId: string, o: { yes?: boolean }) {
  if (!o.yes) {
    const video = unwrap(await ctx.client.api.GET('/v1/videos/{videoId}', { params: { path: { videoId } } }));
    if (!process.stdin.isTTY) throw new UsageError('Deleting needs --yes when there is no terminal to confirm on');
    const ok = await ctx.confirm(`Delete video ${videoId} (${video.name}) and every video derived from it?`);
    if (!ok) throw new UsageError('Not deleted');
  }
  const removed = unwrap(await ctx.client.api.DELETE('/v1/videos/{videoId}', { params: { path: { videoId } } }));
  ctx.result({ removed }, () => `Deleted ${removed.length} video(s):\n${removed.join('\n')}`);
}

export function registerVideos(program: Command): void {
  const videos = program.command('videos').description('Videos: upload, import, list, show, delete');
  const team = new Option('--team <teamId>', 'team of the new video (selectTeamId), when you belong to several');
  videos
    .command('upload <file>')
    .description('Upload a local file as a new master video (resumable: run again after Ctrl-C to continue)')
    .option('--name <name>', 'name of the video (default: the file name)')
    .option('--project <projectId>', 'project of the video (default: the team’s Default Project)')
    .option('--description <text>', 'description of the video')
    .option('--full-ingestion', 'full ingestion (web video, frames) instead of metadata only')
    .addOption(team)
    .option('--chunk-size <bytes>', 'bytes per request (default 8 MiB)', positiveInt('--chunk-size'))
    .option('--wait', 'wait until ingestion is done, with progress')
    .option('--restart', 'forget the saved session of this file and start a new upload (a new video)')
    .action(action(uploadCommand));
  videos
    .command('import <url>')
    .description('Create a master video from an HTTPS URL (the server copies it)')
    .option('--name <name>', 'name of the video (default: the last segment of the URL)')
    .option('--project <projectId>', 'project of the video')
    .option('--description <text>', 'description of the video')
    .option('--file-name <name>', 'file name to record for the source')
    .option('--full-ingestion', 'full ingestion (web video, frames) instead of metadata only')
    .addOption(new Option('--team <teamId>', 'team of the new video (selectTeamId)'))
    .option('--wait', 'wait until ingestion is done, with progress')
    .action(action(importCommand));
  videos
    .command('list')
    .description('List videos, newest first')
    .option('--page <n>', 'page number, from 0', positiveInt('--page'))
    .option('--page-size <n>', 'videos per page (default 20; 100 with --all)', positiveInt('--page-size'))
    .option('--all', 'every page')
    .option('--project <projectId>', 'only this project')
    .option('--team <teamId>', 'only this team')
    .action(action(listCommand));
  videos.command('get <videoId>').description('Show a video').action(action(getCommand));
  videos.command('delete <videoId>').description('Delete a video and every video derived from it').option('-y, --yes', 'do not ask for confirmation').action(action(deleteCommand));
}
