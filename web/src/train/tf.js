// TensorFlow.js for training: autodiff, Adam and the cpu backend (the tfjs bundle, whose core alone registers
// no gradients), plus the wasm and WebGPU backends; pinned in web/package.json, served from node_modules.
// The `<script>`-style bundles are imported for their side effect (they set globalThis.tf); the ES-module
// builds import Node built-ins and bare specifiers.
import "../../node_modules/@tensorflow/tfjs/dist/tf.min.js";
import "../../node_modules/@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js";
import "../../node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js";

export const tf = globalThis.tf;
tf.wasm.setWasmPaths(new URL("../../node_modules/@tensorflow/tfjs-backend-wasm/dist/", import.meta.url).href);

export const BACKENDS = ["wasm", "cpu", "webgpu"];

// Switch to `name`; throws one line saying why when the browser cannot run it.
export async function useBackend(name) {
  if (!BACKENDS.includes(name)) throw new Error(`unknown backend "${name}"; choose one of ${BACKENDS.join(", ")}`);
  if (name === "webgpu") {
    const adapter = "gpu" in navigator ? await navigator.gpu.requestAdapter() : null;
    if (!adapter) throw new Error("WebGPU is not available in this browser (no adapter); use wasm or cpu");
  }
  const ok = await tf.setBackend(name);
  if (!ok) throw new Error(`TensorFlow.js could not start its ${name} backend; use wasm or cpu`);
  await tf.ready();
  return describeBackend();
}

// The active backend in words: "wasm (1 thread)", "webgpu (software adapter)", "cpu". Where the page is
// cross-origin isolated, tfjs takes its threaded SIMD wasm build with a pool of half the logical cores (at
// most 4; tf.wasm.setThreadsCount has no effect in 4.22, tensorflow/tfjs#8513); elsewhere the SIMD build.
export async function describeBackend() {
  const name = tf.getBackend();
  if (name === "wasm") {
    const threads = tf.wasm.getThreadsCount?.() ?? 1;
    return `wasm (${threads} thread${threads === 1 ? "" : "s"})`;
  }
  if (name === "webgpu") {
    const adapter = await navigator.gpu.requestAdapter();
    return adapter?.info?.isFallbackAdapter ? "webgpu (software adapter)" : "webgpu";
  }
  return name;
}

// True where WebGPU is only a software rasteriser: 20-200x slower than wasm for these nets, so "auto" skips it.
export async function webgpuIsSoftware() {
  if (!("gpu" in navigator)) return true;
  const adapter = await navigator.gpu.requestAdapter();
  return (
    !adapter ||
    Boolean(adapter.info?.isFallbackAdapter) ||
    /swiftshader|llvmpipe/i.test(adapter.info?.description || "")
  );
}
