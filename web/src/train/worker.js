// The Train mode's Web Worker: Python (Pyodide) and TensorFlow.js live here, so training never blocks the
// page. Requests come as {id, type, ...} and are answered {id, value} or {id, error}; a training run also
// sends {type: "progress", report} after each iteration. {type: "stop"} ends a run after its iteration.
import { startPython } from "../env.js";
import { ActorCritic, makeRng, minibatchStep } from "./ppo.js";
import { describeBackend, tf, useBackend, webgpuIsSoftware } from "./tf.js";
import { BrowserPPO } from "./trainer.js";

const pythonReady = startPython();
// The worker's one mutable state: the trainer of this tab's run, and whether a stop was asked for.
const state = { trainer: null, stopRequested: false };

// Median milliseconds of one minibatch update of this run's net on the active backend.
async function timeUpdate(run, obsSize, outSize, discrete) {
  const config = run.config;
  const rng = makeRng(0);
  const net = new ActorCritic(
    {
      obsSize,
      outSize,
      discrete,
      hidden: config.hidden,
      activation: config.activation,
      low: [-1],
      high: [1],
      sde: config.use_sde,
      orthoInit: config.ortho_init,
    },
    rng,
  );
  const optimizer = tf.train.adam(config.learning_rate, 0.9, 0.999, 1e-5);
  const rows = config.batch_size;
  const times = [];
  for (let k = 0; k < 13; k++) {
    const began = performance.now();
    const batch = tf.tidy(() => ({
      obs: tf.randomNormal([rows, obsSize], 0, 1, "float32", k),
      actions: discrete ? tf.zeros([rows], "int32") : tf.zeros([rows, outSize]),
      oldLogProb: tf.zeros([rows]),
      oldValue: tf.zeros([rows]),
      advantages: tf.randomNormal([rows], 0, 1, "float32", k),
      returns: tf.ones([rows]),
    }));
    const logs = minibatchStep(net, optimizer, batch, 0.2, config);
    await logs.data();
    tf.dispose([batch, logs]);
    if (k >= 3) times.push(performance.now() - began); // the first calls compile kernels
  }
  net.dispose();
  optimizer.dispose();
  return times.sort((a, b) => a - b)[times.length >> 1];
}

// "auto": time an update on wasm and cpu (and on WebGPU when the adapter is a real GPU) and keep the faster.
async function chooseBackend(requested, run, shape) {
  if (requested !== "auto")
    return { backend: await useBackend(requested), timings: {}, why: `${requested} chosen by hand` };
  const timings = {};
  const candidates = ["wasm", "cpu"];
  if (!(await webgpuIsSoftware())) candidates.push("webgpu");
  else timings.webgpu = "skipped: software adapter (20-200x slower than wasm here)";
  for (const name of candidates) {
    try {
      await useBackend(name);
      timings[name] = await timeUpdate(run, ...shape);
    } catch (err) {
      timings[name] = `unavailable: ${err.message}`;
    }
  }
  const measured = Object.entries(timings).filter(([, ms]) => typeof ms === "number");
  const [best] = measured.sort((a, b) => a[1] - b[1])[0];
  const backend = await useBackend(best);
  const figures = measured.map(([name, ms]) => `${name} ${ms.toFixed(1)} ms`).join(", ");
  return { backend, timings, why: `auto: the faster update (${figures})` };
}

const handlers = {
  async train({ env, run, seed, backend = "wasm", maxSeconds = Infinity, stopAt = null, evalSeedOffset }) {
    const python = await pythonReady;
    state.trainer?.dispose();
    state.trainer = null;
    state.stopRequested = false;
    const vector = python.pyodide.pyimport("thrust_app.envs.core.vector");
    const probe = vector.CoreVec(env, 1, 0);
    const space = probe.envs.get(0).action_space;
    const shape = [probe.obs_size, probe.discrete ? space.n : probe.action_size, probe.discrete];
    space.destroy();
    probe.destroy();
    vector.destroy();
    const chosen = await chooseBackend(backend, run, shape);
    postMessage({ type: "backend", chosen });
    state.trainer = new BrowserPPO(python, { env, run, seed, evalSeedOffset });
    const result = await state.trainer.train({
      stopAt,
      maxSeconds,
      shouldStop: () => state.stopRequested,
      onProgress: (report) => postMessage({ type: "progress", report }),
    });
    return {
      ...result,
      backend: tf.getBackend(),
      backendDetail: await describeBackend(),
      backendWhy: chosen.why,
      backendTimings: chosen.timings,
      weights: await state.trainer.net.policyWeights(),
      normalizer: state.trainer.normalizer?.statistics() ?? null,
      evals: state.trainer.evals,
    };
  },
  async actions({ observations }) {
    if (!state.trainer) throw new Error("no policy has been trained in this tab yet");
    return state.trainer.actions(observations);
  },
  async memory() {
    return tf.memory();
  },
};

self.onmessage = async ({ data }) => {
  if (data.type === "stop") {
    state.stopRequested = true;
    return;
  }
  try {
    postMessage({ id: data.id, value: await handlers[data.type](data) });
  } catch (err) {
    console.error(err);
    postMessage({ id: data.id, error: err.message || String(err) });
  }
};
