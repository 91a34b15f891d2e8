// The player's one mutable state object, and the helpers that read or queue on it without touching the page.
export const params = new URLSearchParams(location.search);

export const state = {
  python: null, // Pyodide with Thrust's env cores (env.js), once started
  bundle: null, // the active bundle {name, manifest, model}
  policy: null, // its onnxruntime session (policy.js)
  env: null, // its env (a PyEnv)
  obs: null,
  done: false,
  playing: false,
  episodeReturn: 0,
  steps: 0,
  seed: null, // embed mode: the seed of the episode playing
  latencies: [], // the last 500 inference times (ms)
  frames: [], // when frames were drawn in the last second
  firstFrameMs: null, // when the page drew its first bundle's first frame (ms since navigation start)
  epRequest: params.get("ep") || "auto",
  // ?embed=1 (with ?bundle=NAME): the canvas and a Play button only, playing episode after episode (for an <iframe>).
  embed: params.has("embed"),
  // Every use of the onnxruntime session (a step, an episode, a switch) runs through this queue, one at a
  // time: a session is never released while a run on it is in flight, and there is one session at most.
  queue: Promise.resolve(),
  latestChoice: 0, // the newest bundle/provider choice; a load that a newer choice overtook is dropped
  busyTimer: null, // the progress line's ticker
  playTimer: null, // the next step while playing
};

export function exclusive(fn) {
  const run = state.queue.then(fn, fn);
  state.queue = run.catch(() => {});
  return run;
}

export function median(values) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
