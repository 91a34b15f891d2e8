// The player's Train mode on the page's side: the form (defaults from py/training.json, i.e. Thrust's presets),
// the training worker, the live learning curve, progress, Stop, and at the end the bundle built from the
// trained weights, played in the same page and offered for download.
import { buildBundle, fetchTemplate } from "./bundle.js";
import { drawCurve } from "./curve.js";

const $ = (id) => document.getElementById(id);

// The fields the form shows; every other config value comes from the chosen preset as it is.
const FIELDS = ["learning_rate", "n_envs", "n_steps", "batch_size", "n_epochs", "gamma", "ent_coef"];
const BACKEND_CHOICES = ["auto", "wasm", "cpu", "webgpu"];

// Requests to the worker, answered by id; progress reports go to `onEvent`.
class TrainingWorker {
  constructor(onEvent) {
    this.worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.pending = new Map();
    this.nextId = 0;
    this.worker.onmessage = ({ data }) => {
      if (data.id === undefined) return onEvent(data);
      const { resolve, reject } = this.pending.get(data.id);
      this.pending.delete(data.id);
      if (data.error) reject(new Error(data.error));
      else resolve(data.value);
    };
    this.worker.onerror = (event) => {
      const error = new Error(`the training worker failed: ${event.message}`);
      for (const { reject } of this.pending.values()) reject(error);
      this.pending.clear();
    };
  }

  request(type, payload = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...payload, id, type });
    });
  }

  stop() {
    this.worker.postMessage({ type: "stop" });
  }
}

export function setupTrainPanel({ playBundle, showError }) {
  const catalogReady = fetch(new URL("../../py/training.json", import.meta.url)).then((r) => r.json());
  const state = {
    worker: null,
    running: null,
    curve: { episodes: [], evals: [], threshold: null, timesteps: 1 },
    bundle: null,
    lastResult: null,
  };

  const worker = () => (state.worker ??= new TrainingWorker(onEvent));

  async function fillForm() {
    const catalog = await catalogReady;
    const envSelect = $("train-env");
    envSelect.innerHTML = "";
    for (const [alias, entry] of Object.entries(catalog.envs))
      envSelect.append(new Option(`${alias} (${entry.env_id})`, alias));
    envSelect.value = "cartpole";
    fillPresets();
  }

  async function fillPresets() {
    const catalog = await catalogReady;
    const entry = catalog.envs[$("train-env").value];
    const presetSelect = $("train-preset");
    presetSelect.innerHTML = "";
    for (const name of Object.keys(entry.presets)) presetSelect.append(new Option(name, name));
    // the fast preset stops at the solve; an env whose default needs what the tab lacks (gSDE) offers others only
    const names = Object.keys(entry.presets);
    presetSelect.value = ["fast", "default"].find((name) => name in entry.presets) ?? names[0];
    fillFields();
  }

  async function fillFields() {
    const catalog = await catalogReady;
    const entry = catalog.envs[$("train-env").value];
    const run = entry.presets[$("train-preset").value];
    const box = $("train-fields");
    box.innerHTML = "";
    for (const name of FIELDS) {
      const label = document.createElement("label");
      label.title = catalog.help[name];
      label.textContent = `${name} `;
      const input = document.createElement("input");
      Object.assign(input, { type: "number", id: `train-${name}`, value: String(run.config[name]), step: "any" });
      label.append(input);
      box.append(label);
    }
    $("train-timesteps").value = String(run.timesteps);
    const threshold = run.stop_at_return ?? entry.solved_at;
    $("train-stop-at").value = threshold === null ? "" : String(threshold);
    $("train-command").textContent = `desktop equivalent: ${run.command}`;
  }

  // The run the form describes, checked: one line naming the field and the fix on a bad value.
  async function formRun() {
    const catalog = await catalogReady;
    const env = $("train-env").value;
    const entry = catalog.envs[env];
    const preset = entry.presets[$("train-preset").value];
    const config = { ...preset.config };
    for (const name of FIELDS) {
      const value = Number($(`train-${name}`).value);
      if (!Number.isFinite(value) || value < 0)
        throw new Error(`${name} must be a number >= 0, got "${$(`train-${name}`).value}"`);
      config[name] = Number.isInteger(preset.config[name]) ? Math.round(value) : value;
    }
    for (const name of ["n_envs", "n_steps", "batch_size", "n_epochs"]) {
      if (config[name] < 1) throw new Error(`${name} must be at least 1`);
    }
    const timesteps = Math.round(Number($("train-timesteps").value));
    if (!(timesteps >= config.n_envs * config.n_steps)) {
      throw new Error(`timesteps must be at least one rollout (n_envs x n_steps = ${config.n_envs * config.n_steps})`);
    }
    const stopText = $("train-stop-at").value.trim();
    const stopAt = $("train-stop-when-solved").checked && stopText !== "" ? Number(stopText) : null;
    return { env, run: { ...preset, config, timesteps }, stopAt };
  }

  function onEvent(message) {
    if (message.type === "backend") {
      $("train-backend-status").textContent = `${message.chosen.backend} — ${message.chosen.why}`;
    } else if (message.type === "progress") {
      const report = message.report;
      state.curve.episodes.push(...report.episodes);
      if (report.evaluation) state.curve.evals.push(report.evaluation);
      state.curve.timesteps = report.timesteps;
      drawCurve($("train-chart"), state.curve);
      $("train-progress").max = report.timesteps;
      $("train-progress").value = report.step;
      const last = state.curve.evals[state.curve.evals.length - 1];
      $("train-status").textContent =
        `${report.step.toLocaleString()} / ${report.timesteps.toLocaleString()} steps, ${report.seconds.toFixed(1)} s, ` +
        `${Math.round(report.stepsPerSecond).toLocaleString()} steps/s, update ${report.updateMs.toFixed(1)} ms` +
        (last ? `, last eval ${last.mean.toFixed(1)}` : "");
    }
  }

  function setRunning(on) {
    $("train-start").disabled = on;
    $("train-stop").disabled = !on;
    for (const id of ["train-env", "train-preset", "train-backend", "train-seed"]) $(id).disabled = on;
  }

  // Put an automation request's choices into the form, so the page shows what runs: env and preset first
  // (they refill the fields), then seed, backend, budget, threshold and the fields named in request.config.
  async function applyRequest(request) {
    const catalog = await catalogReady;
    const entry = catalog.envs[request.env];
    if (!entry)
      throw new Error(`the Train mode has no env "${request.env}"; it trains ${Object.keys(catalog.envs).join(", ")}`);
    if ((request.algo ?? catalog.algo) !== catalog.algo)
      throw new Error(`the Train mode trains ${catalog.algo} only, not "${request.algo}"`);
    $("train-env").value = request.env;
    await fillPresets();
    if (request.preset !== undefined) {
      if (!(request.preset in entry.presets))
        throw new Error(
          `no preset "${request.preset}" for ${request.env}; its presets: ${Object.keys(entry.presets).join(", ")}`,
        );
      $("train-preset").value = request.preset;
      await fillFields();
    }
    for (const [name, value] of Object.entries(request.config ?? {})) {
      if (!FIELDS.includes(name)) throw new Error(`the form has no field "${name}"; it sets ${FIELDS.join(", ")}`);
      $(`train-${name}`).value = String(value);
    }
    if (request.seed !== undefined) $("train-seed").value = String(request.seed);
    if (request.backend !== undefined) {
      if (!BACKEND_CHOICES.includes(request.backend))
        throw new Error(`unknown backend "${request.backend}"; choose ${BACKEND_CHOICES.join(", ")}`);
      $("train-backend").value = request.backend;
    }
    if (request.timesteps !== undefined) $("train-timesteps").value = String(request.timesteps);
    if (request.stopAt !== undefined) {
      $("train-stop-when-solved").checked = request.stopAt !== null;
      if (request.stopAt !== null) $("train-stop-at").value = String(request.stopAt);
    }
  }

  // Train with the form's settings (after `request`'s, for the automation API). Resolves to the result.
  async function train(request = null) {
    if (state.running) throw new Error("a training run is already going; stop it first");
    if (request) await applyRequest(request);
    const { env, run, stopAt } = await formRun();
    const catalog = await catalogReady;
    const backend = $("train-backend").value;
    const seed = Number($("train-seed").value) || 0;
    state.curve = { episodes: [], evals: [], threshold: stopAt, timesteps: run.timesteps };
    state.bundle = null;
    $("train-download").hidden = true;
    drawCurve($("train-chart"), state.curve);
    $("train-progress").max = run.timesteps;
    $("train-progress").value = 0;
    setRunning(true);
    $("train-status").textContent = "starting Python and TensorFlow.js in the worker…";
    const template = fetchTemplate(env);
    state.running = worker().request("train", {
      env,
      run,
      seed,
      backend,
      stopAt,
      maxSeconds: request?.maxSeconds ?? Infinity,
      evalSeedOffset: catalog.eval_seed_offset,
    });
    try {
      const result = await state.running;
      result.receivedAt = performance.now(); // the worker is done; building and loading the bundle follow
      const bundle = await buildBundle(await template, result.weights, result.normalizer, {
        training: {
          timesteps: result.steps,
          eval_mean: result.evalMean,
          solved_at_step: result.solvedAtStep,
          seed,
          device: `browser: TensorFlow.js ${result.backendDetail}`,
          wall_s: Number(result.seconds.toFixed(3)),
        },
        config: run.config,
        command: `trained in the browser player's Train mode (${env}, seed ${seed}); on the desktop: ${run.command}`,
      });
      state.bundle = { name: `trained in this tab (${env}, seed ${seed})`, ...bundle };
      offerDownload(state.bundle);
      $("train-status").textContent =
        `${result.status} after ${result.steps.toLocaleString()} steps in ${result.seconds.toFixed(1)} s` +
        (result.evalMean === null ? "" : `, last eval ${result.evalMean.toFixed(1)}`) +
        (request ? "; the trained policy is loaded in the player" : "; the trained policy plays above");
      await playBundle(state.bundle, { autoplay: !request }); // the automation API plays episodes itself
      delete result.weights;
      state.lastResult = result;
      return result;
    } finally {
      state.running = null;
      setRunning(false);
    }
  }

  function offerDownload(bundle) {
    const link = (id, bytes, type) => {
      const anchor = $(id);
      if (anchor.href) URL.revokeObjectURL(anchor.href);
      anchor.href = URL.createObjectURL(new Blob([bytes], { type }));
    };
    link("train-download-onnx", bundle.model, "application/octet-stream");
    link("train-download-manifest", `${JSON.stringify(bundle.manifest, null, 2)}\n`, "application/json");
    $("train-download").hidden = false;
  }

  const guarded = (fn) => async () => {
    try {
      showError(null);
      await fn();
    } catch (err) {
      showError(err);
    }
  };
  $("train-env").addEventListener("change", guarded(fillPresets));
  $("train-preset").addEventListener("change", guarded(fillFields));
  $("train-start").addEventListener(
    "click",
    guarded(() => train()),
  );
  $("train-stop-when-solved").addEventListener("change", (e) => {
    $("train-stop-at").disabled = !e.target.checked;
  });
  $("train-stop").addEventListener("click", () => state.worker?.stop());
  fillForm().catch(showError);

  return {
    train,
    stop: () => state.worker?.stop(),
    get bundle() {
      return state.bundle;
    },
    actions: (observations) => worker().request("actions", { observations }),
    memory: () => worker().request("memory"),
    ready: catalogReady,
  };
}
