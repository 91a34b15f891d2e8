// PPO (Schulman et al., 2017) in TensorFlow.js: the same algorithm as thrust_app/algos/ppo.py and
// on_policy.py — separate policy and value MLPs, GAE, per-minibatch advantage normalisation, the clipped
// surrogate, optional value clipping, entropy bonus, one global gradient-norm clip, Adam (eps 1e-5), linear
// schedules on progress, and gSDE for Box actions. tests/web/test_train.py holds one update's loss and gradients
// equal to torch's.
// Weights are stored (in, out) and applied as x @ W + b.
import { tf } from "./tf.js";

// A small seeded generator (mulberry32) for everything random on the host: init, sampling, minibatch order.
export function makeRng(seed) {
  let state = (seed >>> 0) ^ 0x9e3779b9;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()); // Box-Muller
  return { next, normal };
}

// An orthogonal (in, out) matrix times `gain` (Saxe et al., 2014; torch's orthogonal_): Gram-Schmidt on a
// Gaussian matrix, over its columns or rows, whichever are fewer.
function orthogonal(rows, cols, gain, rng) {
  const tall = rows >= cols;
  const [n, m] = tall ? [rows, cols] : [cols, rows]; // m orthonormal vectors of length n
  const vectors = [];
  for (let j = 0; j < m; j++) {
    const v = Float64Array.from({ length: n }, () => rng.normal());
    for (const u of vectors) {
      let dot = 0;
      for (let i = 0; i < n; i++) dot += u[i] * v[i];
      for (let i = 0; i < n; i++) v[i] -= dot * u[i];
    }
    const norm = Math.hypot(...v);
    for (let i = 0; i < n; i++) v[i] /= norm;
    vectors.push(v);
  }
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[r * cols + c] = gain * (tall ? vectors[c][r] : vectors[r][c]);
  }
  return out;
}

// torch's nn.Linear initialisation: weights and biases uniform in +-1/sqrt(inputs) (SB3's ortho_init=False).
const uniform = (count, bound, rng) => Float32Array.from({ length: count }, () => (2 * rng.next() - 1) * bound);

// A layer (in = rows, out = cols): orthogonal weights times `gain` and zero biases, or torch's default (gain null).
function linear(rows, cols, gain, rng, name) {
  const bound = 1 / Math.sqrt(rows);
  const weights = gain === null ? uniform(rows * cols, bound, rng) : orthogonal(rows, cols, gain, rng);
  const biases = gain === null ? uniform(cols, bound, rng) : new Float32Array(cols);
  return {
    W: tf.variable(tf.tensor2d(weights, [rows, cols]), true, `${name}.W`),
    b: tf.variable(tf.tensor1d(biases), true, `${name}.b`),
  };
}

// The identity whose gradient is zero: gSDE's features feed the noise's scale but are not trained by it.
const stopGradient = tf.customGrad((x) => ({ value: tf.clone(x), gradFunc: (dy) => tf.zerosLike(dy) }));

// Policy and value for PPO: two MLPs over the observation (SB3's default), a categorical over logits
// (discrete) or a diagonal Gaussian (Box) with a learned state-independent log std, or with gSDE (`sde`;
// Raffin et al., 2022) state-dependent: sigma_d(s)^2 = sum_i z_i(s)^2 exp(2 log_std_id) + 1e-6, z(s) the policy
// tower's output, as thrust_app/nets/policies.py. orthoInit false: torch's default initialisation throughout.
export class ActorCritic {
  constructor(
    {
      obsSize,
      outSize,
      discrete,
      hidden,
      activation,
      logStdInit = 0,
      low = null,
      high = null,
      sde = false,
      orthoInit = true,
    },
    rng,
  ) {
    Object.assign(this, { obsSize, outSize, discrete, hidden, activation, low, high, sde: sde && !discrete });
    const sizes = [obsSize, ...hidden];
    const gain = (value) => (orthoInit ? value : null);
    const tower = (name) =>
      sizes.slice(1).map((size, i) => linear(sizes[i], size, gain(Math.SQRT2), rng, `${name}.${i}`));
    this.policyTower = tower("pi");
    this.valueTower = tower("vf");
    const last = sizes[sizes.length - 1];
    this.piHead = linear(last, outSize, gain(0.01), rng, "pi_head");
    this.vfHead = linear(last, 1, gain(1.0), rng, "vf_head");
    const stdShape = this.sde ? [last, outSize] : [outSize];
    this.logStd = discrete ? null : tf.variable(tf.fill(stdShape, logStdInit), true, "log_std");
  }

  // Every trainable variable, in a fixed order (the order tests and weight transfers use).
  variables() {
    const layers = [...this.policyTower, ...this.valueTower, this.piHead, this.vfHead];
    return [...layers.flatMap((layer) => [layer.W, layer.b]), ...(this.logStd ? [this.logStd] : [])];
  }

  run(tower, x) {
    const act = this.activation === "relu" ? tf.relu : tf.tanh;
    return tower.reduce((h, layer) => act(tf.add(tf.matMul(h, layer.W), layer.b)), x);
  }

  // (policy head output, V(s), the policy's features z(s)) of a batch of observations.
  forward(obs) {
    const features = this.run(this.policyTower, obs);
    const head = tf.add(tf.matMul(features, this.piHead.W), this.piHead.b);
    const value = tf.reshape(tf.add(tf.matMul(this.run(this.valueTower, obs), this.vfHead.W), this.vfHead.b), [-1]);
    return { head, value, features };
  }

  // The Gaussian's log std per sample and dimension: log_std itself, or gSDE's
  // log sigma(s) = 1/2 log(z(s)^2 exp(2 log_std) + 1e-6) (SB3's epsilon), z(s) without its gradient.
  logSigma(features) {
    if (!this.sde) return this.logStd;
    const variance = tf.add(tf.matMul(tf.square(stopGradient(features)), tf.exp(tf.mul(2, this.logStd))), 1e-6);
    return tf.mul(0.5, tf.log(variance));
  }

  // Per sample: log pi(a|s) and the entropy of pi(.|s) (gSDE reads the policy's features z(s)).
  logProbAndEntropy(head, actions, features = null) {
    if (this.discrete) {
      const logP = tf.logSoftmax(head);
      const logProb = tf.sum(tf.mul(logP, tf.oneHot(actions, this.outSize)), -1);
      const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logP), logP), -1)); // H = -sum p log p
      return { logProb, entropy };
    }
    // log N(a; mu, sigma) = -(a - mu)^2 / (2 sigma^2) - log sigma - log sqrt(2 pi), summed over dimensions
    const logSigma = this.logSigma(features);
    const variance = tf.exp(tf.mul(2, logSigma));
    const logDensity = tf.sub(
      tf.neg(tf.div(tf.square(tf.sub(actions, head)), tf.mul(2, variance))),
      tf.add(logSigma, 0.5 * Math.log(2 * Math.PI)),
    );
    const entropyPerDim = tf.add(logSigma, 0.5 + 0.5 * Math.log(2 * Math.PI)); // H = 1/2 + log(sigma sqrt(2 pi))
    const entropy = this.sde ? tf.sum(entropyPerDim, -1) : tf.mul(tf.ones([head.shape[0]]), tf.sum(entropyPerDim));
    return { logProb: tf.sum(logDensity, -1), entropy };
  }

  // The deterministic action's inputs: the policy tower and head as (W, b) arrays, what a bundle holds.
  async policyWeights() {
    const layers = [...this.policyTower, this.piHead];
    return Promise.all(
      layers.map(async (layer) => ({ W: await layer.W.data(), b: await layer.b.data(), shape: layer.W.shape })),
    );
  }

  setWeights(arrays) {
    this.variables().forEach((variable, i) => {
      variable.assign(tf.tensor(arrays[i], variable.shape));
    });
  }

  dispose() {
    for (const variable of this.variables()) variable.dispose();
  }
}

// L = -L^CLIP + vf_coef * L^VF - ent_coef * H on one minibatch (the paper's eq. 9, as a loss), as ppo_loss in
// thrust_app/algos/ppo.py. Returns scalar tensors: the loss and what is logged.
export function ppoLoss(net, batch, clipRange, config) {
  const { head, value: rawValue, features } = net.forward(batch.obs);
  const { logProb, entropy } = net.logProbAndEntropy(head, batch.actions, features);
  let advantages = batch.advantages;
  const n = advantages.shape[0];
  if (config.normalize_advantage && n > 1) {
    const mean = tf.mean(advantages);
    const std = tf.sqrt(tf.div(tf.sum(tf.square(tf.sub(advantages, mean))), n - 1)); // unbiased, as torch.std
    advantages = tf.div(tf.sub(advantages, mean), tf.add(std, 1e-8));
  }
  const logRatio = tf.sub(logProb, batch.oldLogProb);
  const ratio = tf.exp(logRatio); // r = pi(a|s) / pi_old(a|s)
  // L^CLIP = mean(min(r A, clip(r, 1 - eps, 1 + eps) A))
  const surrogate = tf.minimum(
    tf.mul(advantages, ratio),
    tf.mul(advantages, tf.clipByValue(ratio, 1 - clipRange, 1 + clipRange)),
  );
  const policyLoss = tf.neg(tf.mean(surrogate));
  let value = rawValue;
  if (config.clip_range_vf) {
    // V_clipped = V_old + clip(V - V_old, -eps_vf, eps_vf)
    value = tf.add(
      batch.oldValue,
      tf.clipByValue(tf.sub(rawValue, batch.oldValue), -config.clip_range_vf, config.clip_range_vf),
    );
  }
  const valueLoss = tf.mean(tf.square(tf.sub(value, batch.returns))); // L^VF = mean((V - R)^2)
  const entropyMean = tf.mean(entropy);
  const loss = tf.sub(tf.add(policyLoss, tf.mul(config.vf_coef, valueLoss)), tf.mul(config.ent_coef, entropyMean));
  const approxKl = tf.mean(tf.sub(tf.sub(ratio, 1), logRatio)); // KL(pi_old || pi) ~ E[(r - 1) - log r]
  const clipFraction = tf.mean(tf.cast(tf.greater(tf.abs(tf.sub(ratio, 1)), clipRange), "float32"));
  return { loss, logs: { policyLoss, valueLoss, entropy: entropyMean, approxKl, clipFraction } };
}

// The values ppoLoss logs, in the order of clippedGradients' `logs` tensor.
export const LOG_NAMES = ["policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"];

// Gradients of the PPO loss on one minibatch, clipped to a global L2 norm of max_grad_norm
// (scale = min(1, max_norm / (||g|| + 1e-6)), as thrust_app/nets/flat_params.py's clip_grad_norm_).
export function clippedGradients(net, batch, clipRange, config) {
  const variables = net.variables();
  let logs;
  const { value: loss, grads } = tf.variableGrads(() => {
    const out = ppoLoss(net, batch, clipRange, config);
    // kept past variableGrads' scope, which disposes everything but the loss and gradients: one tensor of
    // the five logged values, for the caller to dispose
    logs = tf.keep(
      tf.stack([out.logs.policyLoss, out.logs.valueLoss, out.logs.entropy, out.logs.approxKl, out.logs.clipFraction]),
    );
    return out.loss;
  }, variables);
  // ||g|| over every variable; a stack and a sum, not tf.addN, which corrupts other tensors on tfjs 4.22's WebGPU backend
  const norm = tf.sqrt(tf.sum(tf.stack(variables.map((v) => tf.sum(tf.square(grads[v.name]))))));
  const scale = tf.minimum(1, tf.div(config.max_grad_norm, tf.add(norm, 1e-6)));
  const clipped = Object.fromEntries(variables.map((v) => [v.name, tf.mul(grads[v.name], scale)]));
  return { loss, logs, grads: clipped, norm };
}

// One optimizer step on one minibatch of tensors: clipped gradients, then Adam. Returns the logged values
// (one tensor, LOG_NAMES order), which the caller reads and disposes.
export function minibatchStep(net, optimizer, batch, clipRange, config) {
  return tf.tidy(() => {
    const { logs, grads } = clippedGradients(net, batch, clipRange, config);
    optimizer.applyGradients(grads);
    return logs;
  });
}

// Generalised advantage estimates (Schulman et al., 2016) and returns over a (T, N) rollout, row-major,
// as compute_gae in thrust_app/algos/rollout.py. Returns are A_t + V(s_t).
export function computeGae(rewards, values, dones, lastValues, T, N, gamma, gaeLambda) {
  const advantages = new Float32Array(T * N);
  for (let env = 0; env < N; env++) {
    let running = 0;
    for (let t = T - 1; t >= 0; t--) {
      const i = t * N + env;
      const notDone = 1 - dones[i];
      const nextValue = t === T - 1 ? lastValues[env] : values[i + N];
      const delta = rewards[i] + gamma * nextValue * notDone - values[i]; // delta_t = r_t + gamma V(s_t+1) (1 - d_t) - V(s_t)
      running = delta + gamma * gaeLambda * notDone * running; // A_t = delta_t + gamma lambda (1 - d_t) A_t+1
      advantages[i] = running;
    }
  }
  const returns = advantages.map((a, i) => a + values[i]);
  return { advantages, returns };
}

// A value scheduled over training: constant, or linear from `value` to 0 (config.py's schedule).
export const schedule = (value, kind, progressRemaining) => (kind === "linear" ? value * progressRemaining : value);
