// window.thrustPlayer: the automation API the tests and benchmarks drive (episodes, inference timing, training).
import { checkBundle, Policy } from "../policy.js";
import { activate, fetchBundle, playEpisode, setPlaying } from "./session.js";
import { exclusive, median, state } from "./state.js";
import { setMode } from "./ui.js";

const toBase64 = (bytes) => btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));

// `ready`: the page's start-up (Python, the bundle list); `trainPanel`: the Train mode (train/panel.js).
export function installAutomation(ready, trainPanel) {
  // One whole episode of the bundle named `bundle`, as fast as it goes (`observations`: return them too).
  async function runEpisode({ bundle, seed = 0, ep = "auto", maxSteps = 100000, observations = false } = {}) {
    await ready;
    if (!state.bundle || state.bundle.name !== bundle || state.epRequest !== ep) {
      // the active bundle (one trained or dropped in this tab) by its name; any other from export/
      await activate(state.bundle?.name === bundle ? state.bundle : fetchBundle(bundle), ep);
    }
    setPlaying(false);
    return exclusive(() => playEpisode(seed, maxSteps, observations));
  }

  // Inference timing for benches/onnx_policies.py: per-call milliseconds of batches of `batch` observations.
  async function benchmark({ bundle, ep = "wasm", batch = 1, seconds = 1 } = {}) {
    await ready;
    const { manifest, model } = await fetchBundle(bundle);
    await checkBundle(state.python, manifest, model);
    const policy = await Policy.create(manifest, model, ep, state.python);
    try {
      const times = await policy.benchmark(batch, seconds);
      const [minMs, maxMs] = [Math.min(...times), Math.max(...times)];
      return { ep, batch, calls: times.length, medianMs: median(times), minMs, maxMs };
    } finally {
      await policy.release();
    }
  }

  // Training: {env, algo, seed, backend, maxSeconds, preset, config, timesteps, stopAt} (all optional;
  // defaults are the env's browser preset) -> {solved, seconds, steps, evalMean, backend, ...}.
  async function trainInBrowser(request = {}) {
    setMode("train");
    return trainPanel.train({ env: "cartpole", ...request });
  }

  window.thrustPlayer = {
    ready,
    runEpisode,
    benchmark,
    trainInBrowser,
    stopTraining: () => trainPanel.stop(),
    // The bundle the last training built: {manifest, model (base64)}, or null.
    trainedBundle: () =>
      trainPanel.bundle ? { manifest: trainPanel.bundle.manifest, model: toBase64(trainPanel.bundle.model) } : null,
    // The trained TensorFlow.js policy's greedy actions for a list of observations (what the bundle must equal).
    trainedActions: (observations) => trainPanel.actions(observations),
    trainingMemory: () => trainPanel.memory(),
    settled: () => state.queue, // resolves once every queued switch, step and episode is done
    get activeBundle() {
      return state.bundle?.name ?? null;
    },
    get timings() {
      return { pyodideStartupMs: state.python?.startupMs ?? null, firstFrameMs: state.firstFrameMs };
    },
    // the MuJoCo build the active bundle's robot runs on (mj_versionString), or null
    get mujocoVersion() {
      return state.env?.physics?.version ?? null;
    },
    get activeEp() {
      return state.policy?.ep ?? null;
    },
  };
}
