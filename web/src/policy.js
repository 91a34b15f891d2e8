// The policy side: an exported bundle (policy.onnx + manifest.json) in onnxruntime-web, on the
// WebGPU execution provider when the browser offers an adapter, on wasm otherwise.
import * as ort from "../node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs";

ort.env.wasm.wasmPaths = new URL("../node_modules/onnxruntime-web/dist/", import.meta.url).href;
ort.env.wasm.numThreads = 1;
ort.env.logLevel = "error";

// The dtype each kind of action comes out in, as thrust_app/bundle.py writes and reads them.
export const ACTION_DTYPE = { discrete: "int32", box: "float32" };

export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Check a manifest (with thrust_app/manifest.py's schema, in Pyodide) and its model bytes against each
// other; throws an Error whose message is the one-line reason.
export async function checkBundle(python, manifest, modelBytes) {
  const problem = python.manifests.manifest_problem(JSON.stringify(manifest));
  if (problem) throw new Error(problem);
  const digest = await sha256Hex(modelBytes);
  if (digest !== manifest.sha256) {
    throw new Error(`policy.onnx does not match its manifest: sha256 ${digest.slice(0, 12)}… but the manifest says ${String(manifest.sha256).slice(0, 12)}…`);
  }
}

// Which EP to use: "webgpu" or "wasm", and why.
export async function chooseProvider(requested) {
  let adapter = null;
  let why = "";
  if (!("gpu" in navigator)) why = "this browser has no navigator.gpu";
  else {
    try {
      adapter = await navigator.gpu.requestAdapter();
      if (!adapter) why = "navigator.gpu gave no adapter";
    } catch (err) {
      why = `navigator.gpu.requestAdapter failed: ${err.message}`;
    }
  }
  if (requested === "wasm") return { ep: "wasm", why: "wasm chosen by hand" };
  if (adapter) {
    const info = adapter.info || {};
    const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "an adapter";
    return { ep: "webgpu", why: `WebGPU adapter found (${name})` };
  }
  if (requested === "webgpu") throw new Error(`WebGPU was asked for but is not available: ${why}`);
  return { ep: "wasm", why: `no WebGPU: ${why}; using wasm` };
}

export class Policy {
  static async create(manifest, modelBytes, ep) {
    const session = await ort.InferenceSession.create(modelBytes, {
      executionProviders: [ep], graphOptimizationLevel: "all", logSeverityLevel: 3,
    }).catch((err) => {
      throw new Error(`onnxruntime-web could not load policy.onnx on ${ep}: ${err.message}`);
    });
    return new Policy(manifest, session, ep);
  }

  constructor(manifest, session, ep) {
    this.manifest = manifest;
    this.session = session;
    this.ep = ep;
    this.inputName = session.inputNames[0];
    this.shape = [1, ...manifest.observation.shape];
    this.kind = manifest.action_space.type;
  }

  // One observation in, one action out (a number for discrete, an array for box) and the latency.
  async act(obs) {
    const input = new ort.Tensor("float32", Float32Array.from(obs), this.shape);
    const started = performance.now();
    const outputs = await this.session.run({ [this.inputName]: input });
    const ms = performance.now() - started;
    const tensor = outputs[this.manifest.action_output];
    if (!tensor) throw new Error(`the model gave no "${this.manifest.action_output}" output`);
    const expected = ACTION_DTYPE[this.kind];
    if (tensor.type !== expected) {
      throw new Error(`action output has dtype ${tensor.type}, expected ${expected}: the bundle and the player disagree`);
    }
    const data = await tensor.getData();
    for (const t of Object.values(outputs)) t.dispose?.();
    return { action: this.kind === "discrete" ? data[0] : Array.from(data), ms };
  }

  // Time `session.run` on random batches of `batch` observations for about `seconds`; per-call ms.
  async benchmark(batch, seconds) {
    const size = this.manifest.observation.shape.reduce((a, b) => a * b, 1);
    const data = Float32Array.from({ length: batch * size }, () => Math.random() * 2 - 1);
    const input = new ort.Tensor("float32", data, [batch, ...this.manifest.observation.shape]);
    const times = [];
    const until = performance.now() + seconds * 1000;
    for (let i = 0; i < 3; i++) await this.session.run({ [this.inputName]: input }); // warm-up
    while (performance.now() < until || times.length < 5) {
      const started = performance.now();
      const outputs = await this.session.run({ [this.inputName]: input });
      await outputs[this.manifest.action_output].getData();
      times.push(performance.now() - started);
    }
    return times;
  }

  release() {
    return this.session.release();
  }
}
