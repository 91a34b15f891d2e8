// The active bundle and its episode: loading a bundle onto an execution provider (one onnxruntime session
// at a time, the user's last choice winning), stepping, resetting and playing episodes.
import { PyEnv } from "../env.js";
import { locomotionEnv } from "../mujoco.js";
import { checkBundle, choosePolicy } from "../policy.js";
import { exclusive, median, state } from "./state.js";
import { $, chosenSeed, render, setBusy, showControls, showError, showPlaying } from "./ui.js";

export async function fetchBundle(name) {
  const base = new URL(`../../export/${encodeURIComponent(name)}/`, import.meta.url);
  const manifestResponse = await fetch(new URL("manifest.json", base));
  if (!manifestResponse.ok) throw new Error(`no bundle named "${name}" under export/`);
  const manifest = await manifestResponse.json();
  const model = new Uint8Array(await (await fetch(new URL("policy.onnx", base))).arrayBuffer());
  return { name, manifest, model };
}

function deactivate() {
  state.policy?.release();
  state.env?.destroy();
  Object.assign(state, { bundle: null, policy: null, env: null });
  showControls(false);
}

// The env a bundle plays, checked to be one of Thrust's and to give the observations its model takes: a core, or a
// MuJoCo robot (the locomotion core over MuJoCo's wasm build, fetched only then).
async function envFor(bundle) {
  await checkBundle(state.python, bundle.manifest, bundle.model);
  const { env_id: trainedOn, observation } = bundle.manifest;
  // its env's core, or the core that reproduces its gymnasium env inside its pipeline (MinAtar's games)
  const manifest = state.python.pyodide.toPy(bundle.manifest);
  const envId = state.python.cores.playing_core(manifest);
  const task = state.python.cores.playing_locomotion(manifest);
  manifest.destroy();
  if (envId === undefined && task === undefined)
    throw new Error(`the bundle is for ${trainedOn}, which the player cannot run (Thrust's envs and MuJoCo's runners)`);
  let env;
  if (task === undefined) env = new PyEnv(state.python, envId);
  else {
    const xmlFile = task.xml_file;
    task.destroy();
    setBusy(`loading MuJoCo (wasm, 10.5 MiB once per page) and ${xmlFile} for ${bundle.name}`);
    env = await locomotionEnv(state.python, trainedOn, xmlFile);
  }
  const shape = JSON.stringify(observation.shape);
  if (shape !== JSON.stringify(env.observationShape)) {
    env.destroy();
    throw new Error(
      `the model takes observations of shape ${shape}, but ${env.envId} gives ${JSON.stringify(env.observationShape)}: it does not fit this env`,
    );
  }
  return env;
}

// Make `bundle` (a bundle, or a promise of one still being fetched) the active one on execution provider
// `epRequest` ("auto", "webgpu" or "wasm"). The choice counts from the moment it is made, not from when
// its files arrive, so the user's last choice wins.
export function activate(bundleOrPromise, epRequest) {
  const choice = ++state.latestChoice;
  setPlaying(false);
  return exclusive(async () => {
    let bundle = { name: "the bundle" };
    try {
      bundle = await bundleOrPromise;
      if (choice !== state.latestChoice) return; // a newer choice came in while this one waited
      const env = await envFor(bundle);
      deactivate(); // the old session goes before the new one is made: one session at a time
      state.env = env;
      setBusy(`loading ${bundle.name}`);
      const { policy, why } = await choosePolicy(
        bundle.manifest,
        bundle.model,
        epRequest,
        (step) => setBusy(`loading ${bundle.name}: ${step}`),
        state.python,
      );
      if (choice !== state.latestChoice) {
        policy.release(); // overtaken while loading: drop it, the newer choice is queued
        return;
      }
      Object.assign(state, { bundle, policy, epRequest, latencies: [] });
      $("ep").value = epRequest;
      const physics = env.physics ? `; physics: MuJoCo ${env.physics.version} (wasm)` : "";
      $("ep-status").textContent = `active: ${policy.ep} — ${why}${physics}`;
      $("caption").textContent = `${bundle.manifest.algo} on ${bundle.manifest.env_id} (${bundle.name})`;
      resetEpisode(chosenSeed());
      state.firstFrameMs ??= performance.now();
      showControls(true);
    } catch (err) {
      if (choice !== state.latestChoice) return; // a failure of an overtaken choice no longer concerns the user
      deactivate();
      $("ep-status").textContent = `no bundle active: ${bundle.name} could not be loaded`;
      $("caption").textContent = "";
      throw err;
    } finally {
      if (choice === state.latestChoice) setBusy(null);
    }
  });
}

export function resetEpisode(seed) {
  state.obs = state.env.reset(seed);
  state.policy?.resetMemory();
  Object.assign(state, { done: false, episodeReturn: 0, steps: 0 });
  render();
}

// One env step with the policy's action; returns the inference time (ms).
async function advance() {
  const { action, ms } = await state.policy.act(state.obs, state.env.actionMask());
  const out = state.env.step(action);
  state.obs = out.obs;
  state.episodeReturn += out.reward;
  state.steps += 1;
  state.done = out.terminated || out.truncated;
  return { action, ms };
}

export function stepOnce() {
  return exclusive(async () => {
    if (!state.policy) return;
    if (state.done) resetEpisode(chosenSeed());
    const { ms } = await advance();
    state.latencies.push(ms);
    if (state.latencies.length > 500) state.latencies.shift();
    render();
  });
}

// One whole episode from `seed`, as fast as it goes (drawn once, at the end): its actions and timings, and with
// `keepObservations` the observation each action answered.
export async function playEpisode(seed, maxSteps, keepObservations = false) {
  resetEpisode(seed);
  const started = performance.now();
  const actions = [];
  const latencies = [];
  const observations = [];
  while (!state.done && state.steps < maxSteps) {
    if (keepObservations) observations.push(Array.from(state.obs));
    const { action, ms } = await advance();
    latencies.push(ms);
    actions.push(action);
  }
  state.latencies = latencies.slice(-500);
  render();
  // stepsPerSecond: the whole loop (Python env step + inference), as fast as it goes, drawing excluded
  const stepsPerSecond = state.steps / ((performance.now() - started) / 1000);
  return {
    actions,
    observations: keepObservations ? observations : undefined,
    episodeReturn: state.episodeReturn,
    steps: state.steps,
    ep: state.policy.ep,
    medianInferenceMs: median(latencies),
    stepsPerSecond,
  };
}

function schedule() {
  clearTimeout(state.playTimer);
  if (!state.playing) return;
  state.playTimer = setTimeout(
    async () => {
      try {
        await stepOnce();
        if (state.done && state.embed) {
          state.seed = (state.seed ?? chosenSeed()) + 1;
          resetEpisode(state.seed);
        } else if (state.done) {
          setPlaying(false);
          return;
        }
        schedule();
      } catch (err) {
        setPlaying(false);
        showError(err);
      }
    },
    1000 / Number($("speed").value),
  );
}

export function setPlaying(on) {
  state.playing = on;
  showPlaying();
  schedule();
}
