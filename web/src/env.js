// The environment side: Pyodide running Thrust's own pure-Python env cores (the desktop's source,
// loaded as Thrust's wheel from this server). Nothing here is a JavaScript port of an env.
// Every URL is relative to this file, so the page works under any sub-path (a static site on GitHub Pages).
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";

export async function startPython() {
  const started = performance.now();
  const pyodide = await loadPyodide({ indexURL: new URL("../node_modules/pyodide/", import.meta.url).href });
  const index = new URL("../py/index.json", import.meta.url);
  const { wheel } = await (await fetch(index)).json();
  await pyodide.loadPackage(new URL(wheel, index).href);
  const cores = pyodide.pyimport("thrust_app.envs.core");
  // The manifest schema Python uses (thrust_app/interop/manifest.py), so both sides refuse the same bundles.
  const manifests = pyodide.pyimport("thrust_app.interop.manifest");
  return { pyodide, cores, manifests, startupMs: performance.now() - started };
}

const toObject = (proxy) => {
  const value = proxy.toJs({ dict_converter: Object.fromEntries });
  proxy.destroy();
  return value;
};

// One env instance in Python (the core named `envId`, or the `core` given). Observations come back as plain
// arrays of numbers.
export class PyEnv {
  constructor(python, envId, core = python.cores.make_core(envId)) {
    this.python = python;
    this.core = core;
    this.envId = envId;
    this.observationShape = Array.from(this.core.observation_space.shape);
    const space = this.core.action_space;
    this.discrete = space.n !== undefined;
  }

  reset(seed) {
    const obs = this.core.reset(seed);
    const values = obs.toJs();
    obs.destroy();
    return values;
  }

  step(action) {
    const pyAction = this.discrete ? action : this.python.pyodide.toPy(Array.from(action));
    const result = this.core.step(pyAction);
    if (!this.discrete) pyAction.destroy();
    const obsProxy = result.obs;
    const out = {
      obs: obsProxy.toJs(),
      reward: result.reward,
      terminated: result.terminated,
      truncated: result.truncated,
    };
    obsProxy.destroy();
    result.destroy();
    return out;
  }

  // The legal moves now (a core that offers action masks, as sb3-contrib reads them), or null.
  actionMask() {
    if (!this.core.action_masks) return null;
    const mask = this.core.action_masks();
    const values = mask.toJs();
    mask.destroy();
    return values;
  }

  renderState() {
    return toObject(this.core.render_state());
  }

  destroy() {
    this.core.destroy();
  }
}
