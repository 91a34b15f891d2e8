// The player page: pick or drop a bundle, run episodes with Python env + ONNX policy, draw them.
// window.thrustPlayer is the automation hook the tests and benchmarks drive.
import { PyEnv, startPython } from "./env.js";
import { Policy, checkBundle, choosePolicy } from "./policy.js";
import { draw } from "./render.js";
import { setupTrainPanel } from "./train/panel.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// ?embed=1 (with ?bundle=NAME): the canvas and a Play button only, playing episode after episode (for an <iframe>).
const embed = params.has("embed");
if (embed) document.body.classList.add("embed");

const state = {
  python: null, bundle: null, policy: null, env: null, obs: null, done: false, playing: false,
  episodeReturn: 0, steps: 0, latencies: [], frames: [], epRequest: params.get("ep") || "auto",
};

function showError(err) {
  const box = $("error");
  box.textContent = err ? (err.message || String(err)) : "";
  box.hidden = !err;
  if (err) console.error(err);
}

function median(values) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function updateStats() {
  $("stat-return").textContent = state.env ? state.episodeReturn.toFixed(2) : "–";
  $("stat-steps").textContent = state.env ? String(state.steps) : "–";
  const now = performance.now();
  state.frames = state.frames.filter((t) => now - t < 1000);
  $("stat-fps").textContent = state.playing ? String(state.frames.length) : "–";
  const med = median(state.latencies);
  $("stat-latency").textContent = Number.isNaN(med) ? "–" : `${med.toFixed(2)} ms (${state.policy?.ep ?? "–"})`;
}

function render() {
  if (!state.env) return;
  draw($("canvas"), state.env.envId, state.env.renderState());
  state.frames.push(performance.now());
  updateStats();
}

async function fetchBundle(name) {
  const base = new URL(`../export/${encodeURIComponent(name)}/`, import.meta.url);
  const manifestResponse = await fetch(new URL("manifest.json", base));
  if (!manifestResponse.ok) throw new Error(`no bundle named "${name}" under export/`);
  const manifest = await manifestResponse.json();
  const model = new Uint8Array(await (await fetch(new URL("policy.onnx", base))).arrayBuffer());
  return { name, manifest, model };
}

// Every use of the onnxruntime session (a step, an episode, a switch) runs through this queue, one at a
// time: a session is never released while a run on it is in flight, and there is one session at most.
let queue = Promise.resolve();
function exclusive(fn) {
  const run = queue.then(fn, fn);
  queue = run.catch(() => {});
  return run;
}

// The newest bundle/provider choice; a load that a newer choice overtook is dropped, not shown.
let latestChoice = 0;

// Progress for slow steps (Python start-up, model loads): a bar and the seconds spent so far.
let busyTimer = null;
function setBusy(text) {
  clearInterval(busyTimer);
  const box = $("busy");
  box.hidden = !text;
  if (!text) return;
  const started = performance.now();
  const tick = () => { $("busy-text").textContent = `${text} (${((performance.now() - started) / 1000).toFixed(1)} s)`; };
  tick();
  busyTimer = setInterval(tick, 100);
}

function deactivate() {
  state.policy?.release();
  state.env?.destroy();
  Object.assign(state, { bundle: null, policy: null, env: null });
  for (const id of ["play", "step", "reset"]) $(id).disabled = true;
}

// Make `bundle` (a bundle, or a promise of one still being fetched) the active one on execution provider
// `epRequest` ("auto", "webgpu" or "wasm"). The choice counts from the moment it is made, not from when
// its files arrive, so the user's last choice wins.
function activate(bundleOrPromise, epRequest) {
  const choice = ++latestChoice;
  setPlaying(false);
  return exclusive(async () => {
    let bundle = { name: "the bundle" };
    try {
      bundle = await bundleOrPromise;
      if (choice !== latestChoice) return; // a newer choice came in while this one waited
      await checkBundle(state.python, bundle.manifest, bundle.model);
      const known = state.python.cores.CORE_ENVS.has(bundle.manifest.env_id);
      if (!known) throw new Error(`the bundle is for ${bundle.manifest.env_id}, which the player cannot run (Thrust's envs only)`);
      const shape = JSON.stringify(bundle.manifest.observation.shape);
      const env = new PyEnv(state.python, bundle.manifest.env_id);
      if (shape !== JSON.stringify(env.observationShape)) {
        env.destroy();
        throw new Error(`the model takes observations of shape ${shape}, but ${bundle.manifest.env_id} gives ${JSON.stringify(env.observationShape)}: it does not fit this env`);
      }
      deactivate(); // the old session goes before the new one is made: one session at a time
      state.env = env;
      setBusy(`loading ${bundle.name}`);
      const { policy, why } = await choosePolicy(bundle.manifest, bundle.model, epRequest, (step) => setBusy(`loading ${bundle.name}: ${step}`));
      if (choice !== latestChoice) { // overtaken while loading: drop it, the newer choice is queued
        policy.release();
        return;
      }
      Object.assign(state, { bundle, policy, epRequest, latencies: [] });
      $("ep").value = epRequest;
      $("ep-status").textContent = `active: ${policy.ep} — ${why}`;
      $("caption").textContent = `${bundle.manifest.algo} on ${bundle.manifest.env_id} (${bundle.name})`;
      resetEpisode(Number($("seed").value) || 0);
      for (const id of ["play", "step", "reset"]) $(id).disabled = false;
    } catch (err) {
      if (choice !== latestChoice) return; // a failure of an overtaken choice no longer concerns the user
      deactivate();
      $("ep-status").textContent = `no bundle active: ${bundle.name} could not be loaded`;
      $("caption").textContent = "";
      throw err;
    } finally {
      if (choice === latestChoice) setBusy(null);
    }
  });
}

function resetEpisode(seed) {
  state.obs = state.env.reset(seed);
  Object.assign(state, { done: false, episodeReturn: 0, steps: 0 });
  render();
}

function stepOnce() {
  return exclusive(stepNow);
}

async function stepNow() {
  if (!state.policy) return;
  if (state.done) resetEpisode(Number($("seed").value) || 0);
  const { action, ms } = await state.policy.act(state.obs);
  state.latencies.push(ms);
  if (state.latencies.length > 500) state.latencies.shift();
  const out = state.env.step(action);
  state.obs = out.obs;
  state.episodeReturn += out.reward;
  state.steps += 1;
  state.done = out.terminated || out.truncated;
  render();
}

let timer = null;
function schedule() {
  clearTimeout(timer);
  if (!state.playing) return;
  timer = setTimeout(async () => {
    try {
      await stepOnce();
      if (state.done && embed) {
        resetEpisode(state.seed = (state.seed ?? (Number($("seed").value) || 0)) + 1);
      } else if (state.done) {
        setPlaying(false);
        return;
      }
      schedule();
    } catch (err) {
      setPlaying(false);
      showError(err);
    }
  }, 1000 / Number($("speed").value));
}

function setPlaying(on) {
  state.playing = on;
  $("play").textContent = on ? "Pause" : "Play";
  schedule();
  updateStats();
}

async function loadIndex() {
  const entries = await (await fetch(new URL("../export/index.json", import.meta.url))).json();
  const select = $("bundle");
  select.innerHTML = "";
  select.append(new Option("— choose a bundle —", ""));
  for (const e of entries) {
    const label = e.ok ? `${e.name} (${e.algo}, ${e.env_id})` : `${e.name} — broken: ${e.error}`;
    const option = new Option(label, e.name);
    option.disabled = !e.ok;
    select.append(option);
  }
  return entries;
}

async function readDropped(files) {
  const byName = Object.fromEntries(Array.from(files, (f) => [f.name, f]));
  const onnx = Object.values(byName).find((f) => f.name.endsWith(".onnx"));
  const manifestFile = byName["manifest.json"] || Object.values(byName).find((f) => f.name.endsWith(".json"));
  if (!onnx || !manifestFile) throw new Error("drop both files of a bundle: policy.onnx and manifest.json");
  let manifest;
  try {
    manifest = JSON.parse(await manifestFile.text());
  } catch (err) {
    throw new Error(`${manifestFile.name} is not valid JSON: ${err.message}`);
  }
  return { name: `dropped: ${onnx.name}`, manifest, model: new Uint8Array(await onnx.arrayBuffer()) };
}

// The automation hook: one whole episode of the bundle named `bundle`, as fast as it goes.
async function runEpisode({ bundle, seed = 0, ep = "auto", maxSteps = 100000 } = {}) {
  await ready;
  if (!state.bundle || state.bundle.name !== bundle || state.epRequest !== ep) {
    // the active bundle (one trained or dropped in this tab) by its name; any other from export/
    await activate(state.bundle?.name === bundle ? state.bundle : fetchBundle(bundle), ep);
  }
  setPlaying(false);
  return exclusive(() => playEpisode(seed, maxSteps));
}

async function playEpisode(seed, maxSteps) {
  resetEpisode(seed);
  const started = performance.now();
  const actions = [];
  const latencies = [];
  while (!state.done && state.steps < maxSteps) {
    const { action, ms } = await state.policy.act(state.obs);
    latencies.push(ms);
    actions.push(action);
    const out = state.env.step(action);
    state.obs = out.obs;
    state.episodeReturn += out.reward;
    state.steps += 1;
    state.done = out.terminated || out.truncated;
  }
  state.latencies = latencies.slice(-500);
  render();
  // stepsPerSecond: the whole loop (Python env step + inference), as fast as it goes, drawing excluded
  const stepsPerSecond = state.steps / ((performance.now() - started) / 1000);
  return { actions, episodeReturn: state.episodeReturn, steps: state.steps, ep: state.policy.ep, medianInferenceMs: median(latencies), stepsPerSecond };
}

async function guarded(fn) {
  try {
    showError(null);
    await fn();
  } catch (err) {
    showError(err);
  }
}

const ready = (async () => {
  $("ep").value = state.epRequest;
  $("ep-status").textContent = "starting Python (Pyodide)…";
  setBusy("starting Python (Pyodide) and Thrust's envs");
  state.python = await startPython();
  setBusy(null);
  $("stat-startup").textContent = `${(state.python.startupMs / 1000).toFixed(2)} s`;
  $("ep-status").textContent = "Python ready; pick a bundle";
  await loadIndex();
  const wanted = params.get("bundle");
  if (wanted) {
    $("bundle").value = wanted;
    $("seed").value = params.get("seed") || "0";
    await activate(fetchBundle(wanted), state.epRequest);
    if (embed) setPlaying(true);
  } else if (embed) {
    throw new Error("embed mode needs ?bundle=NAME: the bundle to play");
  }
})();

ready.catch(showError);

$("bundle").addEventListener("change", (e) => e.target.value && guarded(() => activate(fetchBundle(e.target.value), $("ep").value)));
$("ep").addEventListener("change", (e) => state.bundle && guarded(() => activate(state.bundle, e.target.value)));
$("play").addEventListener("click", () => setPlaying(!state.playing));
$("step").addEventListener("click", () => guarded(stepOnce));
$("reset").addEventListener("click", () => guarded(async () => resetEpisode(Number($("seed").value) || 0)));
$("speed").addEventListener("input", (e) => { $("speed-value").textContent = e.target.value; });
$("files").addEventListener("change", (e) => guarded(async () => {
  const files = Array.from(e.target.files);
  e.target.value = ""; // so choosing the same files again fires another change
  await activate(readDropped(files), $("ep").value);
}));
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  guarded(() => activate(readDropped(e.dataTransfer.files), $("ep").value));
});
setInterval(updateStats, 500);

// Inference timing for benches/onnx_policies.py: per-call milliseconds of batches of `batch` observations.
async function benchmark({ bundle, ep = "wasm", batch = 1, seconds = 1 } = {}) {
  await ready;
  const { manifest, model } = await fetchBundle(bundle);
  await checkBundle(state.python, manifest, model);
  const policy = await Policy.create(manifest, model, ep);
  try {
    const times = await policy.benchmark(batch, seconds);
    return { ep, batch, calls: times.length, medianMs: median(times), minMs: Math.min(...times), maxMs: Math.max(...times) };
  } finally {
    await policy.release();
  }
}

// Train mode: the header's tabs switch the controls; a trained policy is played like any bundle.
function setMode(mode) {
  document.body.classList.toggle("training", mode === "train");
  $("mode-play").setAttribute("aria-selected", String(mode === "play"));
  $("mode-train").setAttribute("aria-selected", String(mode === "train"));
}
$("mode-play").addEventListener("click", () => setMode("play"));
$("mode-train").addEventListener("click", () => setMode("train"));
if (params.get("mode") === "train") setMode("train");

const trainPanel = setupTrainPanel({
  showError,
  playBundle: async (bundle, { autoplay }) => {
    await ready;
    await activate(bundle, state.epRequest);
    if (autoplay) setPlaying(true);
  },
});

const toBase64 = (bytes) => btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));

// The automation hook for training: {env, algo, seed, backend, maxSeconds, preset, config, timesteps, stopAt}
// (all optional; defaults are the env's browser preset) -> {solved, seconds, steps, evalMean, backend, ...}.
async function trainInBrowser(request = {}) {
  setMode("train");
  return trainPanel.train({ env: "cartpole", ...request });
}

window.thrustPlayer = {
  ready, runEpisode, benchmark, trainInBrowser,
  stopTraining: () => trainPanel.stop(),
  // The bundle the last training built: {manifest, model (base64)}, or null.
  trainedBundle: () => (trainPanel.bundle ? { manifest: trainPanel.bundle.manifest, model: toBase64(trainPanel.bundle.model) } : null),
  // The trained TensorFlow.js policy's greedy actions for a list of observations (what the bundle must equal).
  trainedActions: (observations) => trainPanel.actions(observations),
  trainingMemory: () => trainPanel.memory(),
  settled: () => queue, // resolves once every queued switch, step and episode is done
  get activeBundle() { return state.bundle?.name ?? null; },
  get timings() { return { pyodideStartupMs: state.python?.startupMs ?? null }; },
  get activeEp() { return state.policy?.ep ?? null; },
};
