// The Train mode's training loop: Thrust's pure-Python env cores (Pyodide, thrust_app/envs/core/vector.py)
// stepped as one batch per call, PPO in TensorFlow.js (ppo.js). It reads as the desktop trainer does:
// collect a rollout, compute GAE, update, evaluate on schedule, report, stop at the solve or the budget.
// A preset with `normalize` trains on normalised observations and rewards (normalize.js), as the desktop does.
import { VecNormalizer } from "./normalize.js";
import { ActorCritic, computeGae, LOG_NAMES, makeRng, minibatchStep, schedule } from "./ppo.js";
import { tf } from "./tf.js";

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[sorted.length >> 1] : NaN;
};

// A Python value as JavaScript, releasing the proxy.
const toJsOnce = (proxy) => {
  const value = proxy.toJs();
  proxy.destroy();
  return value;
};

// Lets queued messages (a Stop) in between two iterations without the 4 ms clamp of setTimeout.
const channel = new MessageChannel();
export const yieldToEvents = () =>
  new Promise((resolve) => {
    channel.port1.onmessage = resolve;
    channel.port2.postMessage(0);
  });

export class BrowserPPO {
  // run: one entry of py/training.json's presets with the user's changes (config, timesteps, eval_every,
  // eval_episodes, stop_at_return); env: the alias; evalSeedOffset: the desktop trainer's EVAL_SEED_OFFSET.
  constructor(python, { env, run, seed, evalSeedOffset }) {
    this.python = python;
    Object.assign(this, { env, run, seed, config: run.config, evalSeedOffset });
    const vector = python.pyodide.pyimport("thrust_app.envs.core.vector");
    this.vec = vector.CoreVec(env, this.config.n_envs, seed);
    this.evalVec = vector.CoreVec(env, run.eval_episodes, seed + evalSeedOffset);
    vector.destroy();
    const space = this.vec.envs.get(0).action_space;
    this.discrete = this.vec.discrete;
    this.obsSize = this.vec.obs_size;
    const low = this.discrete ? null : Array.from(space.low);
    const high = this.discrete ? null : Array.from(space.high);
    const outSize = this.discrete ? space.n : this.vec.action_size;
    space.destroy();
    this.rng = makeRng(seed);
    this.net = new ActorCritic(
      {
        obsSize: this.obsSize,
        outSize,
        discrete: this.discrete,
        hidden: this.config.hidden,
        activation: this.config.activation,
        logStdInit: this.config.log_std_init,
        low,
        high,
        sde: this.config.use_sde,
        orthoInit: this.config.ortho_init,
      },
      this.rng,
    );
    this.optimizer = tf.train.adam(this.config.learning_rate, 0.9, 0.999, 1e-5);
    this.normalizer = this.config.normalize ? new VecNormalizer(this.config, this.obsSize, this.config.n_envs) : null;
    this.step = 0;
    this.obs = this.observe(toJsOnce(this.vec.reset()), this.config.n_envs);
    this.updateMs = [];
    this.evals = [];
  }

  // Raw observations from the cores into the normaliser's statistics, and out normalised (as they are without one).
  observe(raw, rows) {
    if (!this.normalizer) return raw;
    this.normalizer.observe(raw, rows);
    return this.normalizer.normalize(raw);
  }

  // Raw observations as the policy sees them, the statistics unchanged (evaluation, a bundle's inputs).
  normalized(raw) {
    return this.normalizer ? this.normalizer.normalize(raw) : raw;
  }

  // The policy head, values and (gSDE) the policy's features of observations (host arrays in, host arrays out).
  // Reads are asynchronous: WebGPU's synchronous read returns zeros in a worker.
  async forward(obsArray, rows) {
    const out = tf.tidy(() => this.net.forward(tf.tensor2d(obsArray, [rows, this.obsSize])));
    const [head, value, features] = await Promise.all([
      out.head.data(),
      out.value.data(),
      this.net.sde ? out.features.data() : null,
    ]);
    tf.dispose(out);
    return { head, value, features };
  }

  // gSDE: new exploration weights W ~ N(0, exp(log_std)^2), one (features x actions) matrix per env.
  resampleExploration(logStd) {
    this.exploration = Array.from({ length: this.config.n_envs }, () =>
      Float64Array.from(logStd, (ls) => Math.exp(ls) * this.rng.normal()),
    );
  }

  // Row r's exploration noise in dimension d and the Gaussian's sigma there: sigma * N(0, 1) with a
  // state-independent log std, or gSDE's z(s) W and sigma_d(s) = sqrt(sum_i z_i^2 exp(2 log_std_id) + 1e-6).
  noise(r, d, logStd, features) {
    if (!this.net.sde) {
      const sigma = Math.exp(logStd[d]);
      return { noise: sigma * this.rng.normal(), sigma };
    }
    const out = this.net.outSize;
    const width = logStd.length / out;
    let noise = 0;
    let variance = 1e-6;
    for (let i = 0; i < width; i++) {
      const z = features[r * width + i];
      noise += z * this.exploration[r][i * out + d];
      variance += z * z * Math.exp(2 * logStd[i * out + d]);
    }
    return { noise, sigma: Math.sqrt(variance) };
  }

  // One sampled action per row, its log-probability, and the action the env receives (clipped for Box).
  sample(head, rows, logStd, features = null) {
    const out = this.net.outSize;
    const actions = new Float32Array(rows * (this.discrete ? 1 : out));
    const logProbs = new Float32Array(rows);
    const envActions = [];
    if (this.discrete) {
      for (let r = 0; r < rows; r++) {
        const logits = head.subarray(r * out, (r + 1) * out);
        const top = Math.max(...logits);
        const logSum = top + Math.log(logits.reduce((sum, l) => sum + Math.exp(l - top), 0));
        let u = this.rng.next();
        let a = 0;
        for (; a < out - 1; a++) {
          u -= Math.exp(logits[a] - logSum);
          if (u < 0) break;
        }
        actions[r] = a;
        logProbs[r] = logits[a] - logSum;
        envActions.push(a);
      }
      return { actions, logProbs, envActions };
    }
    for (let r = 0; r < rows; r++) {
      let logProb = 0;
      for (let d = 0; d < out; d++) {
        const { noise, sigma } = this.noise(r, d, logStd, features);
        const a = head[r * out + d] + noise;
        actions[r * out + d] = a;
        logProb += -0.5 * (noise / sigma) ** 2 - Math.log(sigma) - 0.5 * Math.log(2 * Math.PI); // log N(a; mu, sigma)
        envActions.push(Math.min(Math.max(a, this.net.low[d]), this.net.high[d]));
      }
      logProbs[r] = logProb;
    }
    return { actions, logProbs, envActions };
  }

  // The greedy action: argmax of the logits, or the mean clipped to the bounds (what a bundle computes).
  greedy(head, rows) {
    const out = this.net.outSize;
    const actions = [];
    for (let r = 0; r < rows; r++) {
      const row = Array.from(head.subarray(r * out, (r + 1) * out));
      if (this.discrete) actions.push(row.indexOf(Math.max(...row)));
      else actions.push(...row.map((v, d) => Math.min(Math.max(v, this.net.low[d]), this.net.high[d])));
    }
    return actions;
  }

  // n_steps of every env with the current policy; truncated episodes get gamma * V(final obs) added.
  async collectRollout() {
    const { n_envs: N, n_steps: T, gamma } = this.config;
    const actSize = this.discrete ? 1 : this.net.outSize;
    const rollout = {
      obs: new Float32Array(T * N * this.obsSize),
      actions: new Float32Array(T * N * actSize),
      logProbs: new Float32Array(T * N),
      values: new Float32Array(T * N),
      rewards: new Float32Array(T * N),
      dones: new Float32Array(T * N),
      episodes: [],
    };
    const logStd = this.discrete ? null : await this.net.logStd.data();
    const resampleEvery = this.config.sde_sample_freq;
    for (let t = 0; t < T; t++) {
      if (this.net.sde && (t === 0 || (resampleEvery > 0 && t % resampleEvery === 0))) this.resampleExploration(logStd);
      const { head, value, features } = await this.forward(this.obs, N);
      const { actions, logProbs, envActions } = this.sample(head, N, logStd, features);
      rollout.obs.set(this.obs, t * N * this.obsSize);
      rollout.actions.set(actions, t * N * actSize);
      rollout.logProbs.set(logProbs, t * N);
      rollout.values.set(value, t * N);
      const [rawObs, rawRewards, terminated, truncated, truncatedObs, finished] = toJsOnce(this.vec.step(envActions));
      const obs = this.observe(rawObs, N);
      const dones = terminated.map((ended, env) => ended || truncated[env]);
      const rewards = this.normalizer ? this.normalizer.rewards(rawRewards, dones) : rawRewards;
      if (truncatedObs.length) {
        const finals = this.normalized(truncatedObs.flatMap(([, final]) => final));
        const bootstrap = (await this.forward(finals, truncatedObs.length)).value;
        truncatedObs.forEach(([env], i) => {
          rewards[env] += gamma * bootstrap[i];
        });
      }
      for (let env = 0; env < N; env++) {
        rollout.rewards[t * N + env] = rewards[env];
        rollout.dones[t * N + env] = dones[env] ? 1 : 0;
      }
      rollout.episodes.push(...finished.map(([ret, length]) => ({ step: this.step + (t + 1) * N, ret, length })));
      this.obs = obs;
    }
    rollout.lastValues = (await this.forward(this.obs, N)).value;
    return rollout;
  }

  // n_epochs of minibatch updates on one rollout (thrust_app/algos/ppo.py's update); returns mean logs.
  async update(rollout, advantages, returns, clipRange) {
    const config = this.config;
    const n = rollout.values.length;
    const actSize = this.discrete ? 1 : this.net.outSize;
    const gather = (source, index, width) => {
      const out = new Float32Array(index.length * width);
      index.forEach((row, i) => {
        out.set(source.subarray(row * width, (row + 1) * width), i * width);
      });
      return out;
    };
    const logs = [];
    for (let epoch = 0; epoch < config.n_epochs; epoch++) {
      const order = Array.from({ length: n }, (_, i) => i);
      for (let i = n - 1; i > 0; i--) {
        // Fisher-Yates
        const j = Math.floor(this.rng.next() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
      for (let start = 0; start < n; start += config.batch_size) {
        const index = order.slice(start, start + config.batch_size);
        const began = performance.now();
        const batch = tf.tidy(() => ({
          obs: tf.tensor2d(gather(rollout.obs, index, this.obsSize), [index.length, this.obsSize]),
          actions: this.discrete
            ? tf.tensor1d(
                Int32Array.from(index, (row) => rollout.actions[row]),
                "int32",
              )
            : tf.tensor2d(gather(rollout.actions, index, actSize), [index.length, actSize]),
          oldLogProb: tf.tensor1d(gather(rollout.logProbs, index, 1)),
          oldValue: tf.tensor1d(gather(rollout.values, index, 1)),
          advantages: tf.tensor1d(gather(advantages, index, 1)),
          returns: tf.tensor1d(gather(returns, index, 1)),
        }));
        const stats = minibatchStep(this.net, this.optimizer, batch, clipRange, config);
        tf.dispose(batch);
        const numbers = await stats.data();
        stats.dispose();
        this.updateMs.push(performance.now() - began);
        logs.push(numbers);
      }
      if (config.target_kl && logs[logs.length - 1][3] > 1.5 * config.target_kl) break;
    }
    return Object.fromEntries(
      LOG_NAMES.map((name, k) => [name, logs.reduce((sum, row) => sum + row[k], 0) / logs.length]),
    );
  }

  // One iteration: schedules from progress, rollout, GAE, update. The schedules are read at the progress after
  // this iteration's rollout, where SB3 reads them (training/trainer.py's learning_progress).
  async iteration() {
    const config = this.config;
    const steps = config.n_steps * config.n_envs;
    const progressRemaining = Math.max(0, 1 - (this.step + steps) / this.run.timesteps);
    this.optimizer.learningRate = schedule(config.learning_rate, config.lr_schedule, progressRemaining);
    const clipRange = schedule(config.clip_range, config.clip_schedule, progressRemaining);
    const rollout = await this.collectRollout();
    const { advantages, returns } = computeGae(
      rollout.rewards,
      rollout.values,
      rollout.dones,
      rollout.lastValues,
      config.n_steps,
      config.n_envs,
      config.gamma,
      config.gae_lambda,
    );
    const losses = await this.update(rollout, advantages, returns, clipRange);
    this.step += steps;
    return { episodes: rollout.episodes, losses, learningRate: this.optimizer.learningRate };
  }

  // eval_episodes greedy episodes side by side (as thrust_app/training/evaluation.py), seeds seed + offset + i.
  async evaluate() {
    const episodes = this.run.eval_episodes;
    let obs = this.normalized(toJsOnce(this.evalVec.reset()));
    const returns = new Array(episodes).fill(0);
    const live = new Array(episodes).fill(true);
    while (live.some(Boolean)) {
      const actions = this.greedy((await this.forward(obs, episodes)).head, episodes);
      const [next, rewards, terminated, truncated] = toJsOnce(this.evalVec.step(actions));
      for (let i = 0; i < episodes; i++) {
        if (!live[i]) continue;
        returns[i] += rewards[i];
        if (terminated[i] || truncated[i]) live[i] = false;
      }
      obs = this.normalized(next);
    }
    const mean = returns.reduce((a, b) => a + b, 0) / episodes;
    return { step: this.step, mean, min: Math.min(...returns), max: Math.max(...returns) };
  }

  // Train until the budget, the solve (an evaluation >= stopAt), maxSeconds, or shouldStop().
  // onProgress gets a report after every iteration.
  async train({ stopAt = null, maxSeconds = Infinity, shouldStop = () => false, onProgress = () => {} } = {}) {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    let nextEval = this.run.eval_every;
    let status = "budget";
    let evalSeconds = 0;
    while (this.step < this.run.timesteps) {
      if (shouldStop()) {
        status = "stopped";
        break;
      }
      if (seconds() >= maxSeconds) {
        status = "time limit";
        break;
      }
      const { episodes, losses, learningRate } = await this.iteration();
      let evaluation = null;
      if (this.step >= nextEval || this.step >= this.run.timesteps) {
        const evalStarted = performance.now();
        evaluation = await this.evaluate();
        evalSeconds += (performance.now() - evalStarted) / 1000;
        this.evals.push(evaluation);
        while (nextEval <= this.step) nextEval += this.run.eval_every;
      }
      onProgress({
        step: this.step,
        timesteps: this.run.timesteps,
        seconds: seconds(),
        stepsPerSecond: this.step / seconds(),
        updateMs: median(this.updateMs.slice(-200)),
        episodes,
        losses,
        learningRate,
        evaluation,
      });
      if (evaluation && stopAt !== null && evaluation.mean >= stopAt) {
        status = "solved";
        break;
      }
      await yieldToEvents();
    }
    const last = this.evals[this.evals.length - 1];
    const solvedAt = stopAt === null ? null : (this.evals.find((e) => e.mean >= stopAt)?.step ?? null);
    return {
      status,
      solved: solvedAt !== null,
      solvedAtStep: solvedAt,
      seconds: seconds(),
      evalSeconds,
      steps: this.step,
      evalMean: last?.mean ?? null,
      updateMs: median(this.updateMs),
      stepsPerSecond: this.step / seconds(),
    };
  }

  // Greedy actions for given observations (what the exported bundle must reproduce).
  async actions(observations) {
    const obs = this.normalized(observations.flat());
    return this.greedy((await this.forward(obs, observations.length)).head, observations.length);
  }

  dispose() {
    this.net.dispose();
    this.optimizer.dispose();
    this.vec.destroy();
    this.evalVec.destroy();
  }
}
