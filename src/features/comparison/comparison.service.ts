/**
 * "Compare with" (`getVideoComparisonLink`): the rules that decide whether two videos can be
 * compared, the signed link to the comparison page, and the public route that serves the page
 * (docs/comparison.md).
 *
 * Rules, checked in this order:
 *  1. both videos visible to the caller (member of their team), else 404;
 *  2. a video is not compared with itself (409 VIDEO_COMPARISON_CONFLICT);
 *  3. both fully ingested: ingestion DONE, full frames and web video available, a WEB_VIDEO asset
 *     stored and the duration known (409 VIDEO_NOT_FULLY_INGESTED, naming the video and what is
 *     missing; the left video is checked first);
 *  4. the same master video: a master's master is itself, a clip's or processed video's is its
 *     `masterVideoId` (409 VIDEO_COMPARISON_CONFLICT);
 *  5. similar durations: at most max(1 s, 5 % of the longer one) apart (409 VIDEO_COMPARISON_CONFLICT).
 */
import express, { Router } from 'express';
import type { Db } from '../../db/database';
import { sendError } from '../../http/error-mapper';
import type { SignedLinks } from '../../http/signed-links';
import type { Clock } from '../../shared/clock';
import { ConflictError, NotFoundError } from '../../shared/errors';
import { renderComparisonPage, type ComparedSide } from './comparison-page';
import { videoAssetsOf, type VideoAsset } from '../videos';
import { assetPath } from '../videos';
import { findVideo, findVideoInScope, Video } from '../videos';
import { TransactionalService } from '../../db/transactional';

/** How long a comparison link (and the video links inside the page) stays valid. */
export const COMPARISON_LINK_HOURS = 24;
/** Durations are similar when they differ by at most the larger of these two. */
export const DURATION_TOLERANCE_MS = 1_000;
export const DURATION_TOLERANCE_RATIO = 0.05;

export interface ComparisonLink {
  link: string;
  leftVideoId: string;
  rightVideoId: string;
  expiresAt: Date;
}

/** The largest difference allowed between two durations (milliseconds). */
export function durationToleranceMs(aMs: number, bMs: number): number {
  return Math.max(DURATION_TOLERANCE_MS, DURATION_TOLERANCE_RATIO * Math.max(aMs, bMs));
}

/** The master video of `v`: itself for a master, else its `masterVideoId`. */
export function masterOf(v: Pick<Video, 'id' | 'kind' | 'masterVideoId'>): string {
  return v.kind === 'MASTER' ? v.id : (v.masterVideoId ?? v.id);
}

const comparePath = (leftId: string, rightId: string) => `/media/v1/compare/${leftId}/${rightId}`;
const durationOf = (v: Video): number | undefined => {
  const d = Number((v.ingestion?.metadata as { durationInMillis?: unknown } | undefined)?.durationInMillis);
  return Number.isFinite(d) && d > 0 ? d : undefined;
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

export interface ComparisonServiceDeps {
  db: Db;
  clock: Clock;
  signer: SignedLinks;
}

export class ComparisonService extends TransactionalService {
  private readonly clock: Clock;
  private readonly signer: SignedLinks;
  constructor(deps: ComparisonServiceDeps) {
    super(deps.db);
    this.clock = deps.clock;
    this.signer = deps.signer;
  }

  async link(userId: string, leftId: string, rightId: string): Promise<ComparisonLink> {
    const scope = { memberUserId: userId };
    const [left, right] = await Promise.all([findVideoInScope(this.db, leftId, scope), findVideoInScope(this.db, rightId, scope)]);
    if (!left) throw new NotFoundError(`Video ${leftId} not found`);
    if (!right) throw new NotFoundError(`Target video ${rightId} not found`);
    if (left.id === right.id) {
      throw new ConflictError('VIDEO_COMPARISON_CONFLICT', `A video cannot be compared with itself (${left.id}); compare it with another video of the same master`);
    }
    await this.requireFullyIngested(left, 'video');
    await this.requireFullyIngested(right, 'target video');

    const [leftMaster, rightMaster] = [masterOf(left), masterOf(right)];
    if (leftMaster !== rightMaster) {
      throw new ConflictError('VIDEO_COMPARISON_CONFLICT', `The videos do not share a master video: ${left.id} belongs to master ${leftMaster}, ${right.id} to master ${rightMaster}`);
    }
    const [l, r] = [durationOf(left)!, durationOf(right)!];
    const tolerance = durationToleranceMs(l, r);
    if (Math.abs(l - r) > tolerance) {
      throw new ConflictError(
        'VIDEO_COMPARISON_CONFLICT',
        `The durations are not similar: ${left.id} lasts ${seconds(l)}, ${right.id} lasts ${seconds(r)}; they may differ by at most ${seconds(tolerance)} (the larger of 1 s and 5 %)`,
      );
    }
    const expiresAt = new Date(this.clock.now().getTime() + COMPARISON_LINK_HOURS * 3_600_000);
    return { link: this.signer.sign(comparePath(left.id, right.id), expiresAt), leftVideoId: left.id, rightVideoId: right.id, expiresAt };
  }

  /** 409 VIDEO_NOT_FULLY_INGESTED naming the video and everything it lacks. */
  private async requireFullyIngested(v: Video, role: string): Promise<void> {
    const i = v.ingestion;
    const missing: string[] = [];
    if (!i) missing.push('ingestion has not started');
    else {
      if (i.status !== 'DONE') missing.push(`ingestion is ${i.status}`);
      if (!i.fullFramesAvailable) missing.push('the full frames are not available');
      if (!i.webVideoAvailable) missing.push('the web video is not available');
      else if (!(await this.webVideoOf(v.id))) missing.push('the web video is not stored');
      if (i.status === 'DONE' && durationOf(v) === undefined) missing.push('its duration is unknown');
    }
    if (missing.length === 0) return;
    const hint = v.fullIngestion ? '' : ' (it was created without fullIngestion, so it has no frames or web video)';
    throw new ConflictError('VIDEO_NOT_FULLY_INGESTED', `The ${role} ${v.id} is not fully ingested: ${missing.join('; ')}${hint}`);
  }

  private async webVideoOf(videoId: string): Promise<VideoAsset | undefined> {
    return (await videoAssetsOf(this.db, videoId)).find((a) => a.kind === 'WEB_VIDEO');
  }

  /**
   * GET/HEAD /media/v1/compare/:leftId/:rightId?expires=..&signature=..: the comparison page.
   * The signature is the only credential. The web videos are linked with fresh signed asset
   * links that expire with the page link.
   */
  routes(): Router {
    const router = express.Router();
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
    router.get('/media/v1/compare/:leftId/:rightId', async (req, res, next) => {
      try {
        const { leftId, rightId } = req.params;
        if (!uuid.test(leftId) || !uuid.test(rightId)) return sendError(req, res, 404, 'NOT_FOUND', 'No such comparison');
        const verdict = this.signer.verify(comparePath(leftId, rightId), req.query.expires, req.query.signature, this.clock.now());
        if (verdict === 'invalid') return sendError(req, res, 403, 'ACCESS_DENIED', 'The link signature is not valid');
        if (verdict === 'expired') {
          return sendError(req, res, 403, 'ACCESS_DENIED', 'The comparison link has expired; ask GET /v1/videos/{videoId}/compare-with/{targetVideoId} for a new one');
        }
        const expiresAt = new Date(Number(req.query.expires) * 1000);
        const sides: ComparedSide[] = [];
        for (const id of [leftId, rightId]) {
          const video = await findVideo(this.db, id);
          const web = video && (await this.webVideoOf(id));
          if (!video || !web) return sendError(req, res, 404, 'NOT_FOUND', `The video ${id} or its web video no longer exists`);
          const meta = video.ingestion?.metadata as { averageFrameRate?: { frameRate?: number } } | undefined;
          sides.push({
            videoId: id,
            name: video.name,
            webVideoUrl: this.signer.sign(assetPath(id, web.id), expiresAt),
            fps: meta?.averageFrameRate?.frameRate,
            width: web.width,
            height: web.height,
          });
        }
        const page = renderComparisonPage(sides[0]!, sides[1]!, expiresAt);
        res.setHeader('Content-Security-Policy', page.csp);
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('Referrer-Policy', 'no-referrer');
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.setHeader('X-Frame-Options', 'DENY');
        res.setHeader('X-Robots-Tag', 'noindex, nofollow');
        res.status(200).type('text/html; charset=utf-8').send(page.html);
      } catch (err) {
        next(err);
      }
    });
    return router;
  }
}
