// MuJoCo in the tab: DeepMind's official wasm build (npm `mujoco-js`, pinned in package.json) as the physics under
// Thrust's locomotion core (thrust_app/envs/core/locomotion.py, run by Pyodide), which adds gymnasium's observation,
// reward, termination and reset noise. The desktop's twin of this class is thrust_app/envs/mujoco_physics.py: the
// core calls the same methods on both. The module (~11 MB) is fetched only when a MuJoCo bundle is chosen.

import { PyEnv } from "./env.js";

const wasm = { loading: null }; // the module's promise, once per page

// The wasm module, with an in-memory folder for the XML files.
function loadMujoco() {
  wasm.loading ??= import("../node_modules/mujoco-js/dist/mujoco_wasm.js").then(async ({ default: load }) => {
    const mujoco = await load();
    mujoco.FS.mkdir("/thrust");
    mujoco.FS.mount(mujoco.MEMFS, { root: "." }, "/thrust");
    return mujoco;
  });
  return wasm.loading;
}

// A list the core passes from Python (a PyProxy, converted while the call lasts) or a plain JS array.
const numbers = (values) => (typeof values.toJs === "function" ? values.toJs() : values);

export class MujocoPhysics {
  // gymnasium's own XML file for the env (served under py/mujoco/ from the installed gymnasium).
  static async load(xmlFile) {
    const url = new URL(`../py/mujoco/${encodeURIComponent(xmlFile)}`, import.meta.url);
    const [mujoco, response] = await Promise.all([loadMujoco(), fetch(url)]);
    if (!response.ok) throw new Error(`the player has no ${xmlFile} (MuJoCo XML) to load: ${response.status}`);
    mujoco.FS.writeFile(`/thrust/${xmlFile}`, await response.text());
    return new MujocoPhysics(mujoco, mujoco.MjModel.loadFromXML(`/thrust/${xmlFile}`));
  }

  constructor(mujoco, model) {
    this.mujoco = mujoco;
    this.model = model;
    this.data = new mujoco.MjData(model);
    this.nq = model.nq;
    this.nv = model.nv;
    this.timestep = model.opt.timestep;
    this.version = mujoco.mj_versionString();
  }

  ctrl_range() {
    const bounds = this.model.actuator_ctrlrange;
    return Array.from({ length: this.model.nu }, (_, i) => [bounds[2 * i], bounds[2 * i + 1]]);
  }

  reset() {
    this.mujoco.mj_resetData(this.model, this.data);
  }

  state() {
    return [Array.from(this.data.qpos), Array.from(this.data.qvel)];
  }

  set_state(qpos, qvel) {
    this.data.qpos.set(numbers(qpos));
    this.data.qvel.set(numbers(qvel));
    this.mujoco.mj_forward(this.model, this.data);
  }

  // `n` physics steps under control `ctrl` (gymnasium's frame skip)
  step(ctrl, n) {
    this.data.ctrl.set(numbers(ctrl));
    for (let i = 0; i < n; i++) this.mujoco.mj_step(this.model, this.data);
  }

  // per geom: type, radius, half-length, centre (x, y, z), axis (x, y, z): locomotion.py's GEOM_FIELDS
  geoms() {
    const { geom_type: type, geom_size: size } = this.model;
    const { geom_xpos: pos, geom_xmat: mat } = this.data;
    return Array.from({ length: this.model.ngeom }, (_, g) => [
      type[g],
      size[3 * g],
      size[3 * g + 1],
      pos[3 * g],
      pos[3 * g + 1],
      pos[3 * g + 2],
      mat[9 * g + 2],
      mat[9 * g + 5],
      mat[9 * g + 8],
    ]);
  }

  delete() {
    this.data.delete();
    this.model.delete();
  }
}

// gymnasium's `envId` (HalfCheetah-v5, ...) in the tab: the locomotion core over MuJoCo's wasm build, which it
// releases with the core.
class LocomotionEnv extends PyEnv {
  constructor(python, envId, physics) {
    super(python, envId, python.cores.locomotion_core(envId, physics));
    this.physics = physics;
  }

  destroy() {
    super.destroy();
    this.physics.delete();
  }
}

export async function locomotionEnv(python, envId, xmlFile) {
  return new LocomotionEnv(python, envId, await MujocoPhysics.load(xmlFile));
}
