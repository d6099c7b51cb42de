/**
 * The one way to make an AbortController in src: its signal is shared by the work it stops, each
 * operation in flight adding its own `abort` listener and removing it when it ends (a job's
 * parallel ffmpeg probes, a copy's parts, the webhook deliveries a stop waits for). Past ten
 * listeners Node prints "MaxListenersExceededWarning: Possible EventTarget memory leak" to the
 * operator's log, which here is the expected shape of the work (the webhook bench showed it at a
 * delivery concurrency of 64), so the limit is lifted on these signals.
 */
import { setMaxListeners } from 'node:events';

export function sharedAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
