/**
 * The comparison page: one self-contained HTML document (inline CSS and JS, no external
 * requests) that plays two web videos on top of each other with a wipe slider. The left video
 * is the clock; the right one follows it (playbackRate nudges above half a frame of drift, a
 * seek above 0.3 s). The script and the style are constants, so the Content-Security-Policy
 * allows exactly them by hash, plus media from the origin(s) of the two video links; everything
 * that varies (names, links, frame rate, aspect) is HTML-escaped into text and data attributes.
 */
import { createHash } from 'node:crypto';

export interface ComparedSide {
  videoId: string;
  name: string;
  /** Signed link to the video's WEB_VIDEO asset. */
  webVideoUrl: string;
  /** Frames per second of the video (metadata), used for frame steps and the drift threshold. */
  fps?: number;
  width?: number;
  height?: number;
}

export interface ComparisonPage {
  html: string;
  /** The Content-Security-Policy header value for this document. */
  csp: string;
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
*{box-sizing:border-box}
html,body{margin:0;min-height:100%;background:#101114;color:#e8e8ea;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{display:flex;flex-direction:column;align-items:center;padding:8px;gap:8px}
.player{width:100%;max-width:calc((100vh - 124px) * var(--aspect, 1.7778));min-width:min(100%, 280px);display:flex;flex-direction:column;gap:8px}
.stage{position:relative;width:100%;aspect-ratio:var(--aspect, 1.7778);background:#000;overflow:hidden;touch-action:none;user-select:none;-webkit-user-select:none;cursor:ew-resize;border-radius:4px}
.stage video{position:absolute;inset:0;width:100%;height:100%;object-fit:contain;pointer-events:none;background:#000}
#right{clip-path:inset(0 0 0 50%)}
.divider{position:absolute;top:0;bottom:0;left:50%;width:2px;margin-left:-1px;background:rgba(255,255,255,.9);box-shadow:0 0 3px rgba(0,0,0,.8);outline:none}
.divider .grip{position:absolute;top:50%;left:50%;width:30px;height:30px;transform:translate(-50%,-50%);border-radius:50%;background:rgba(255,255,255,.95);box-shadow:0 0 4px rgba(0,0,0,.7)}
.divider .grip::before,.divider .grip::after{content:"";position:absolute;top:50%;width:0;height:0;border:5px solid transparent;transform:translateY(-50%)}
.divider .grip::before{left:3px;border-right:6px solid #333}
.divider .grip::after{right:3px;border-left:6px solid #333}
.divider:focus-visible .grip{outline:3px solid #5ab0ff;outline-offset:2px}
.label{position:absolute;top:8px;max-width:calc(50% - 16px);padding:2px 8px;background:rgba(0,0,0,.65);border-radius:4px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;pointer-events:none;font-weight:600}
.label-left{left:8px}
.label-right{right:8px}
.status{position:absolute;left:50%;bottom:10px;transform:translateX(-50%);padding:2px 10px;border-radius:4px;background:rgba(0,0,0,.7);pointer-events:none;max-width:90%;text-align:center}
.status:empty{display:none}
.controls{display:flex;align-items:center;gap:6px;flex-wrap:wrap}
.controls button{min-width:40px;height:34px;padding:0 10px;border:1px solid #3a3d45;border-radius:4px;background:#22252c;color:#e8e8ea;font:inherit;cursor:pointer}
.controls button:hover{background:#2c3039}
.controls button:focus-visible,#seek:focus-visible{outline:2px solid #5ab0ff;outline-offset:1px}
#seek{flex:1 1 160px;min-width:120px;accent-color:#5ab0ff}
.time{font-variant-numeric:tabular-nums;white-space:nowrap}
.help{margin:0;color:#9a9ca3;font-size:12px}
@media (max-width:600px){.help{display:none}.controls button{min-width:34px;padding:0 6px}.label{font-size:12px}}
`;

const SCRIPT = `
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var app = $('app'), player = $('player'), stage = $('stage'), L = $('left'), R = $('right'), divider = $('divider');
  var playBtn = $('play'), backBtn = $('back'), fwdBtn = $('fwd'), seek = $('seek'), time = $('time'), soundBtn = $('sound'), statusEl = $('status');
  var fps = parseFloat(app.getAttribute('data-fps')) || 25;
  var frame = 1 / fps;
  var aspect = parseFloat(stage.getAttribute('data-aspect'));
  var wantPlaying = false, dragging = false, scrubbing = false, pos = 50, raf = 0;

  // On the player, so both its width limit and the stage's aspect ratio follow the video.
  if (aspect > 0) player.style.setProperty('--aspect', String(aspect));
  L.muted = true;
  R.muted = true;

  function clamp(v, lo, hi) { return Math.min(hi, Math.max(lo, v)); }
  function duration() { var d = L.duration; return isFinite(d) && d > 0 ? d : 0; }
  function status(text) { statusEl.textContent = text || ''; }
  function fmt(t) {
    if (!isFinite(t) || t < 0) t = 0;
    var m = Math.floor(t / 60), s = t - m * 60;
    return m + ':' + (s < 10 ? '0' : '') + s.toFixed(2);
  }

  // The wipe: the right video is visible to the right of the divider.
  function setWipe(p) {
    pos = clamp(p, 0, 100);
    R.style.clipPath = 'inset(0 0 0 ' + pos + '%)';
    divider.style.left = pos + '%';
    divider.setAttribute('aria-valuenow', String(Math.round(pos)));
  }
  function wipeAt(e) { var r = stage.getBoundingClientRect(); return r.width > 0 ? ((e.clientX - r.left) / r.width) * 100 : pos; }
  stage.addEventListener('pointerdown', function (e) {
    if (e.pointerType === 'mouse' && e.button !== 0) return;
    dragging = true;
    try { stage.setPointerCapture(e.pointerId); } catch (_) {}
    setWipe(wipeAt(e));
    divider.focus({ preventScroll: true });
    e.preventDefault();
  });
  stage.addEventListener('pointermove', function (e) { if (dragging) setWipe(wipeAt(e)); });
  function endDrag() { dragging = false; }
  stage.addEventListener('pointerup', endDrag);
  stage.addEventListener('pointercancel', endDrag);
  stage.addEventListener('lostpointercapture', endDrag);
  function wipeKey(e) {
    var step = e.shiftKey ? 10 : 1;
    if (e.key === 'ArrowLeft' || e.key === 'ArrowDown') setWipe(pos - step);
    else if (e.key === 'ArrowRight' || e.key === 'ArrowUp') setWipe(pos + step);
    else if (e.key === 'Home') setWipe(0);
    else if (e.key === 'End') setWipe(100);
    else return false;
    e.preventDefault();
    return true;
  }
  divider.addEventListener('keydown', function (e) { if (wipeKey(e)) e.stopPropagation(); });

  // Playback: the left video is the clock, the right one follows.
  function render() {
    var d = duration(), t = L.currentTime;
    if (!scrubbing) { seek.max = String(d); seek.value = String(t); }
    time.textContent = fmt(t) + ' / ' + fmt(d) + '  \\u00b7  frame ' + (Math.floor(t * fps + 1e-6) + 1);
    playBtn.textContent = wantPlaying ? '\\u275a\\u275a' : '\\u25b6';
    playBtn.setAttribute('aria-label', wantPlaying ? 'Pause' : 'Play');
    playBtn.title = (wantPlaying ? 'Pause' : 'Play') + ' (space)';
  }
  function sync() {
    if (!wantPlaying || L.paused || R.paused || L.seeking || R.seeking) return;
    var drift = R.currentTime - L.currentTime, a = Math.abs(drift), base = L.playbackRate;
    if (a > 0.3) { R.currentTime = L.currentTime; R.playbackRate = base; }
    else if (a > frame / 2) R.playbackRate = base * (1 - clamp(drift * 2, -0.1, 0.1));
    else if (R.playbackRate !== base) R.playbackRate = base;
  }
  function loop() {
    cancelAnimationFrame(raf);
    sync();
    render();
    if (wantPlaying) raf = requestAnimationFrame(loop);
  }
  function failed(err) {
    if (err && err.name === 'AbortError') return; // a play() cut short by our own pause(): not a failure
    wantPlaying = false;
    L.pause(); R.pause();
    status('Playback failed: ' + (err && err.message ? err.message : String(err)));
    render();
  }
  // The right video may be up to a second shorter: past its end it stays on its last frame
  // (play() on an ended video would restart it from the beginning).
  function rightDone() { return isFinite(R.duration) && L.currentTime >= R.duration - frame / 2; }
  function start(v) {
    if (v === R && rightDone()) return;
    var p = v.play();
    if (p && p.catch) p.catch(failed);
  }
  function play() {
    if (duration() > 0 && L.currentTime >= duration() - frame / 2) seekTo(0);
    else if (Math.abs(R.currentTime - L.currentTime) > frame / 2) R.currentTime = L.currentTime;
    wantPlaying = true;
    status('');
    R.playbackRate = L.playbackRate;
    start(R);
    start(L);
    loop();
  }
  function pause() {
    wantPlaying = false;
    cancelAnimationFrame(raf);
    L.pause(); R.pause();
    R.playbackRate = L.playbackRate;
    R.currentTime = L.currentTime;
    render();
  }
  function toggle() { if (wantPlaying) pause(); else play(); }
  function seekTo(t) {
    t = clamp(t, 0, duration());
    L.currentTime = t;
    R.currentTime = t;
    render();
  }
  function step(n) {
    if (wantPlaying) pause();
    var last = Math.max(0, Math.ceil(duration() * fps) - 1);
    var target = clamp(Math.floor(L.currentTime * fps + 1e-6) + n, 0, last);
    seekTo((target + 0.5) / fps);
  }
  function other(v) { return v === L ? R : L; }
  function resume() {
    if (!wantPlaying || L.readyState < 3 || (R.readyState < 3 && !rightDone())) return;
    status('');
    if (R.paused) start(R);
    if (L.paused) start(L);
    loop();
  }
  [L, R].forEach(function (v) {
    // A stalled video holds the other one, so neither runs ahead while the other buffers.
    v.addEventListener('waiting', function () { if (wantPlaying && !other(v).paused) { other(v).pause(); status('Buffering\\u2026'); } });
    v.addEventListener('playing', resume);
    v.addEventListener('canplay', resume);
    v.addEventListener('seeked', function () { render(); resume(); });
    v.addEventListener('error', function () {
      status('The ' + (v === L ? 'left' : 'right') + ' video could not be loaded; the link may have expired, ask for a new comparison link.');
    });
  });
  L.addEventListener('timeupdate', function () { sync(); render(); });
  L.addEventListener('durationchange', render);
  L.addEventListener('loadedmetadata', function () {
    if (L.videoWidth > 0 && L.videoHeight > 0) player.style.setProperty('--aspect', String(L.videoWidth / L.videoHeight));
    render();
  });
  L.addEventListener('ended', function () { wantPlaying = false; R.pause(); render(); });

  playBtn.addEventListener('click', toggle);
  backBtn.addEventListener('click', function () { step(-1); });
  fwdBtn.addEventListener('click', function () { step(1); });
  seek.addEventListener('input', function () { scrubbing = true; seekTo(parseFloat(seek.value)); });
  seek.addEventListener('change', function () { scrubbing = false; render(); });
  soundBtn.addEventListener('click', function () {
    L.muted = !L.muted;
    soundBtn.setAttribute('aria-pressed', String(!L.muted));
    soundBtn.textContent = L.muted ? 'Sound off' : 'Sound on (left)';
  });
  document.addEventListener('keydown', function (e) {
    var tag = e.target && e.target.tagName;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (tag === 'INPUT' || tag === 'BUTTON') { if (e.key !== ',' && e.key !== '.') return; }
    if (e.key === ' ' || e.key === 'k') { toggle(); e.preventDefault(); }
    else if (e.key === ',') { step(-1); e.preventDefault(); }
    else if (e.key === '.') { step(1); e.preventDefault(); }
    else wipeKey(e);
  });

  setWipe(50);
  render();
})();
`;

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
const STYLE_HASH = sha256(STYLE);
const SCRIPT_HASH = sha256(SCRIPT);

function originOf(url: string): string {
  return new URL(url).origin;
}

const num = (n: number | undefined) => (n !== undefined && Number.isFinite(n) && n > 0 ? n : undefined);

export function renderComparisonPage(left: ComparedSide, right: ComparedSide, expiresAt: Date): ComparisonPage {
  const fps = num(left.fps) ?? num(right.fps) ?? 25;
  const w = num(left.width) ?? num(right.width);
  const hgt = num(left.height) ?? num(right.height);
  const aspect = w && hgt ? w / hgt : 16 / 9;
  const e = escapeHtml;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${e(left.name)} | ${e(right.name)} · Vidmill comparison</title>
<style>${STYLE}</style>
</head>
<body>
<main id="app" data-fps="${e(String(fps))}" data-expires="${e(expiresAt.toISOString())}" data-left-video-id="${e(left.videoId)}" data-right-video-id="${e(right.videoId)}">
<div class="player" id="player">
<div class="stage" id="stage" data-aspect="${e(aspect.toFixed(4))}">
<video id="left" src="${e(left.webVideoUrl)}" preload="auto" playsinline muted></video>
<video id="right" src="${e(right.webVideoUrl)}" preload="auto" playsinline muted></video>
<div class="label label-left" id="left-label" title="${e(left.name)}">${e(left.name)}</div>
<div class="label label-right" id="right-label" title="${e(right.name)}">${e(right.name)}</div>
<div class="divider" id="divider" role="slider" tabindex="0" aria-label="Wipe position (percent of the width showing the left video)" aria-orientation="horizontal" aria-valuemin="0" aria-valuemax="100" aria-valuenow="50"><span class="grip"></span></div>
<div class="status" id="status" role="status" aria-live="polite"></div>
</div>
<div class="controls">
<button type="button" id="play" aria-label="Play" title="Play (space)">&#9654;</button>
<button type="button" id="back" aria-label="Previous frame" title="Previous frame (,)">&#9664;|</button>
<button type="button" id="fwd" aria-label="Next frame" title="Next frame (.)">|&#9654;</button>
<input type="range" id="seek" min="0" max="0" step="any" value="0" aria-label="Position">
<span class="time" id="time">0:00.00 / 0:00.00</span>
<button type="button" id="sound" aria-pressed="false" title="Sound of the left video">Sound off</button>
</div>
<p class="help">Drag across the picture (or focus the divider and use the arrow keys) to move the wipe. Space plays and pauses; , and . step one frame. This link expires at ${e(expiresAt.toISOString())}.</p>
</div>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
  const media = [...new Set([originOf(left.webVideoUrl), originOf(right.webVideoUrl)])].join(' ');
  const csp = [
    "default-src 'none'",
    `script-src ${SCRIPT_HASH}`,
    `style-src ${STYLE_HASH}`,
    `media-src ${media}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { html, csp };
}
