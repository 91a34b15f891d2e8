// The policy side: an exported bundle (policy.onnx + manifest.json) in onnxruntime-web, on wasm or
// WebGPU: chosen by hand, or by `choosePolicy`'s "auto" (the faster one on this model, never a software GPU).
import * as ort from "../node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs";

ort.env.wasm.wasmPaths = new URL("../node_modules/onnxruntime-web/dist/", import.meta.url).href;
ort.env.wasm.numThreads = 1;
ort.env.logLevel = "error";

// The dtype each kind of action comes out in, as thrust_app/interop/bundle.py writes and reads them.
export const ACTION_DTYPE = { discrete: "int32", box: "float32" };

export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Check a manifest (with thrust_app/interop/manifest.py's schema, in Pyodide) and its model bytes against each
// other; throws an Error whose message is the one-line reason.
export async function checkBundle(python, manifest, modelBytes) {
  const problem = python.manifests.manifest_problem(JSON.stringify(manifest));
  if (problem) throw new Error(problem);
  const digest = await sha256Hex(modelBytes);
  if (digest !== manifest.sha256) {
    throw new Error(
      `policy.onnx does not match its manifest: sha256 ${digest.slice(0, 12)}… but the manifest says ${String(manifest.sha256).slice(0, 12)}…`,
    );
  }
}

// The browser's WebGPU adapter, or null and why there is none.
async function probeWebGPU() {
  if (!("gpu" in navigator)) return { adapter: null, why: "this browser has no navigator.gpu" };
  try {
    const adapter = await navigator.gpu.requestAdapter();
    return adapter ? { adapter, why: "" } : { adapter: null, why: "navigator.gpu gave no adapter" };
  } catch (err) {
    return { adapter: null, why: `navigator.gpu.requestAdapter failed: ${err.message}` };
  }
}

function adapterName(adapter) {
  const info = adapter.info || {};
  return [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "an adapter";
}

// A software rasteriser (SwiftShader, llvmpipe) behind WebGPU is 20-200x slower than wasm for these nets.
function isSoftware(adapter) {
  const info = adapter.info || {};
  return (
    Boolean(info.isFallbackAdapter) ||
    /swiftshader|llvmpipe|software/i.test(`${adapterName(adapter)} ${info.device || ""}`)
  );
}

const fmtMs = (value) => (value < 1 ? value.toFixed(2) : value.toFixed(1));

// A policy on the provider `requested` ("auto", "webgpu" or "wasm") and the reason for the provider.
// "auto" takes wasm when there is no WebGPU or only a software adapter; with a real GPU it times both on
// this bundle's model (one session at a time) and keeps the faster. `progress(text)` reports each step.
// `python` (Pyodide) feeds a Dict observation's parts.
export async function choosePolicy(manifest, modelBytes, requested, progress = () => {}, python = null) {
  const create = async (ep) => {
    progress(`creating the ${ep} session`);
    return Policy.create(manifest, modelBytes, ep, python);
  };
  if (requested === "wasm") return { policy: await create("wasm"), why: "wasm chosen by hand" };
  const { adapter, why } = await probeWebGPU();
  if (requested === "webgpu") {
    if (!adapter) throw new Error(`WebGPU was asked for but is not available: ${why}; choose wasm or auto`);
    return { policy: await create("webgpu"), why: `WebGPU chosen by hand (${adapterName(adapter)})` };
  }
  if (!adapter) return { policy: await create("wasm"), why: `no WebGPU (${why}); using wasm` };
  if (isSoftware(adapter)) {
    return {
      policy: await create("wasm"),
      why: `the only WebGPU adapter is a software one (${adapterName(adapter)}): no GPU; using wasm`,
    };
  }
  progress("timing wasm on this model");
  const wasm = await create("wasm");
  const wasmMs = await wasm.medianStepMs();
  await wasm.release();
  progress("timing WebGPU on this model (compiles its shaders)");
  const gpu = await create("webgpu");
  const gpuMs = await gpu.medianStepMs();
  const figures = `WebGPU ${fmtMs(gpuMs)} ms vs wasm ${fmtMs(wasmMs)} ms per step on this model`;
  if (gpuMs < wasmMs) return { policy: gpu, why: `auto: ${figures}` };
  await gpu.release();
  return { policy: await create("wasm"), why: `auto: ${figures}` };
}

export class Policy {
  static async create(manifest, modelBytes, ep, python = null) {
    const session = await ort.InferenceSession.create(modelBytes, {
      executionProviders: [ep],
      graphOptimizationLevel: "all",
      logSeverityLevel: 3,
    }).catch((err) => {
      throw new Error(`onnxruntime-web could not load policy.onnx on ${ep}: ${err.message}`);
    });
    const policy = new Policy(manifest, session, ep, python);
    await policy.act(new Array(manifest.observation.shape.reduce((a, b) => a * b, 1)).fill(0)); // warm-up (compiles shaders)
    policy.resetMemory();
    return policy;
  }

  // Median milliseconds of one step's inference over `steps` calls on a zero observation.
  async medianStepMs(steps = 15) {
    const obs = new Array(this.manifest.observation.shape.reduce((a, b) => a * b, 1)).fill(0);
    const times = [];
    for (let i = 0; i < steps; i++) times.push((await this.act(obs)).ms);
    this.resetMemory();
    return times.sort((a, b) => a - b)[times.length >> 1];
  }

  constructor(manifest, session, ep, python = null) {
    this.manifest = manifest;
    this.session = session;
    this.ep = ep;
    // Pyodide, for a Dict observation's parts (Python's manifest.split_observation makes each part's input).
    this.python = python;
    this.parts = manifest.observation.parts || null;
    this.inputName = session.inputNames[0];
    this.shape = [1, ...manifest.observation.shape];
    this.kind = manifest.action_space.type;
    // A recurrent policy's memory (manifest.memory): fed in with each observation, replaced by what comes out.
    this.memory = manifest.memory || null;
    this.resetMemory();
  }

  // An episode starts: the memory goes back to zeros (as thrust_app/interop/playback.py does).
  resetMemory() {
    if (this.memory) this.state = new Float32Array(this.memory.size);
  }

  // The feed for `batch` observations in `data`: with the memory (this step's, or zeros for a batch) if any, and
  // the action mask (all allowed where none is given) for a bundle that takes one.
  feed(data, batch, state, mask = null) {
    const feed = this.parts
      ? this.partsFeed(data, batch)
      : { [this.inputName]: new ort.Tensor("float32", data, [batch, ...this.manifest.observation.shape]) };
    const maskInput = this.manifest.inputs.find((input) => input.name === "action_mask");
    if (maskInput) {
      const n = this.manifest.action_space.n;
      const allowed = mask ? Uint8Array.from(mask, Number) : new Uint8Array(batch * n).fill(1);
      feed.action_mask = new ort.Tensor("bool", allowed, [batch, n]);
    }
    if (this.memory) {
      feed[this.memory.input] = new ort.Tensor("float32", state || new Float32Array(batch * this.memory.size), [
        batch,
        this.memory.size,
      ]);
    }
    return feed;
  }

  // `batch` Dict observations (flat, as gymnasium flattens them) as one input per part, each as the env gives it.
  partsFeed(flat, batch = 1) {
    const size = flat.length / batch;
    const parts = this.python.pyodide.toPy(this.parts);
    const rows = Array.from({ length: batch }, (_, row) => {
      const values = this.python.manifests.split_observation(
        Array.from(flat.subarray(row * size, (row + 1) * size)),
        parts,
      );
      const out = values.toJs();
      values.destroy();
      return out;
    });
    parts.destroy();
    const feed = {};
    this.parts.forEach((part, i) => {
      const { dtype, shape } = this.manifest.inputs.find((input) => input.name === part.name);
      const flatValues = rows.flatMap((row) => [row[i]].flat(3));
      const typed =
        dtype === "int64"
          ? BigInt64Array.from(flatValues, BigInt)
          : dtype === "uint8"
            ? Uint8Array.from(flatValues)
            : Float32Array.from(flatValues);
      feed[part.name] = new ort.Tensor(dtype, typed, [batch, ...shape.slice(1)]);
    });
    return feed;
  }

  // One observation in (and the legal moves, for a bundle with an action mask), one action out (a number for
  // discrete, an array for box) and the latency; a recurrent policy's memory moves one step on.
  async act(obs, mask = null) {
    const feed = this.feed(Float32Array.from(obs), 1, this.state, mask);
    const started = performance.now();
    let outputs;
    try {
      outputs = await this.session.run(feed);
    } catch (err) {
      throw new Error(
        `the policy could not be run on ${this.ep}: ${String(err.message).split("\n")[0]} — the model's input does not fit this env's observations, or the model is damaged`,
      );
    }
    const ms = performance.now() - started;
    const tensor = outputs[this.manifest.action_output];
    if (!tensor) throw new Error(`the model gave no "${this.manifest.action_output}" output`);
    const expected = ACTION_DTYPE[this.kind];
    if (tensor.type !== expected) {
      throw new Error(
        `action output has dtype ${tensor.type}, expected ${expected}: the bundle and the player disagree`,
      );
    }
    const data = await tensor.getData();
    if (this.memory) {
      const next = outputs[this.memory.output];
      if (!next) throw new Error(`the model gave no "${this.memory.output}" output (its memory)`);
      this.state = Float32Array.from(await next.getData());
    }
    for (const t of Object.values(outputs)) t.dispose?.();
    return { action: this.kind === "discrete" ? data[0] : Array.from(data), ms };
  }

  // Time `session.run` on random batches of `batch` observations for about `seconds`; per-call ms.
  async benchmark(batch, seconds) {
    const size = this.manifest.observation.shape.reduce((a, b) => a * b, 1);
    const data = Float32Array.from({ length: batch * size }, () => Math.random() * 2 - 1);
    const feed = this.feed(data, batch);
    const times = [];
    const until = performance.now() + seconds * 1000;
    for (let i = 0; i < 3; i++) await this.session.run(feed); // warm-up
    while (performance.now() < until || times.length < 5) {
      const started = performance.now();
      const outputs = await this.session.run(feed);
      await outputs[this.manifest.action_output].getData();
      times.push(performance.now() - started);
    }
    return times;
  }

  release() {
    return this.session.release();
  }
}
