// What the player shows: errors, progress, the episode's numbers and frame, the bundle list, the mode tabs;
// and what it reads from the page (the seed, a dropped bundle). It changes no state but the page's own.
import { draw } from "../render.js";
import { median, state } from "./state.js";

export const $ = (id) => document.getElementById(id);

export const chosenSeed = () => Number($("seed").value) || 0;

export function showError(err) {
  const box = $("error");
  box.textContent = err ? err.message || String(err) : "";
  box.hidden = !err;
  if (err) console.error(err);
}

export function updateStats() {
  $("stat-return").textContent = state.env ? state.episodeReturn.toFixed(2) : "–";
  $("stat-steps").textContent = state.env ? String(state.steps) : "–";
  const now = performance.now();
  state.frames = state.frames.filter((t) => now - t < 1000);
  $("stat-fps").textContent = state.playing ? String(state.frames.length) : "–";
  const med = median(state.latencies);
  $("stat-latency").textContent = Number.isNaN(med) ? "–" : `${med.toFixed(2)} ms (${state.policy?.ep ?? "–"})`;
}

export function render() {
  if (!state.env) return;
  draw($("canvas"), state.env.envId, state.env.renderState());
  state.frames.push(performance.now());
  updateStats();
}

// Progress for slow steps (Python start-up, model loads): a bar and the seconds spent so far.
export function setBusy(text) {
  clearInterval(state.busyTimer);
  const box = $("busy");
  box.hidden = !text;
  if (!text) return;
  const started = performance.now();
  const tick = () => {
    $("busy-text").textContent = `${text} (${((performance.now() - started) / 1000).toFixed(1)} s)`;
  };
  tick();
  state.busyTimer = setInterval(tick, 100);
}

export function showControls(enabled) {
  for (const id of ["play", "step", "reset"]) $(id).disabled = !enabled;
}

export function showPlaying() {
  $("play").textContent = state.playing ? "Pause" : "Play";
  updateStats();
}

export async function loadIndex() {
  const entries = await (await fetch(new URL("../../export/index.json", import.meta.url))).json();
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

export async function readDropped(files) {
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

// Train mode: the header's tabs switch the controls; a trained policy is played like any bundle.
export function setMode(mode) {
  document.body.classList.toggle("training", mode === "train");
  $("mode-play").setAttribute("aria-selected", String(mode === "play"));
  $("mode-train").setAttribute("aria-selected", String(mode === "train"));
}

export async function guarded(fn) {
  try {
    showError(null);
    await fn();
  } catch (err) {
    showError(err);
  }
}
