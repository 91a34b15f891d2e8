// The player page: pick or drop a bundle, run episodes with Python env + ONNX policy, draw them.
// Its parts: player/state.js (the one state object), player/ui.js (the page), player/session.js (the active
// bundle and its episodes), player/automation.js (window.thrustPlayer, which the tests and benchmarks drive).
import { startPython } from "./env.js";
import { installAutomation } from "./player/automation.js";
import { activate, fetchBundle, resetEpisode, setPlaying, stepOnce } from "./player/session.js";
import { params, state } from "./player/state.js";
import {
  $,
  chosenSeed,
  guarded,
  loadIndex,
  readDropped,
  setBusy,
  setMode,
  showError,
  updateStats,
} from "./player/ui.js";
import { setupTrainPanel } from "./train/panel.js";

if (state.embed) document.body.classList.add("embed");

const ready = (async () => {
  $("ep").value = state.epRequest;
  $("ep-status").textContent = "starting Python (Pyodide)…";
  setBusy("starting Python (Pyodide) and Thrust's envs");
  state.python = await startPython();
  setBusy(null);
  $("stat-startup").textContent = `${(state.python.startupMs / 1000).toFixed(2)} s`;
  $("ep-status").textContent = "Python ready; pick a bundle";
  const entries = await loadIndex();
  if (state.embed && !params.get("bundle")) throw new Error("embed mode needs ?bundle=NAME: the bundle to play");
  // the bundle asked for, else the first one that loads: the page opens ready to play
  const wanted = params.get("bundle") || entries.find((e) => e.ok)?.name;
  if (wanted) {
    $("bundle").value = wanted;
    $("seed").value = params.get("seed") || "0";
    await activate(fetchBundle(wanted), state.epRequest);
    if (state.embed) setPlaying(true);
  }
})();

ready.catch(showError);

$("bundle").addEventListener(
  "change",
  (e) => e.target.value && guarded(() => activate(fetchBundle(e.target.value), $("ep").value)),
);
$("ep").addEventListener("change", (e) => state.bundle && guarded(() => activate(state.bundle, e.target.value)));
$("play").addEventListener("click", () => setPlaying(!state.playing));
$("step").addEventListener("click", () => guarded(stepOnce));
$("reset").addEventListener("click", () => guarded(async () => resetEpisode(chosenSeed())));
$("speed").addEventListener("input", (e) => {
  $("speed-value").textContent = e.target.value;
});
$("files").addEventListener("change", (e) =>
  guarded(async () => {
    const files = Array.from(e.target.files);
    e.target.value = ""; // so choosing the same files again fires another change
    await activate(readDropped(files), $("ep").value);
  }),
);
const drop = $("drop");
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  guarded(() => activate(readDropped(e.dataTransfer.files), $("ep").value));
});
setInterval(updateStats, 500);

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

installAutomation(ready, trainPanel);
