// Observation and reward normalisation while training in the tab, with Stable-Baselines3's VecNormalize
// semantics, as thrust_app/training/normalization.py: observations become clip((obs - mean) / sqrt(var + eps),
// -clip_obs, clip_obs) with the running statistics of every observation seen in training; rewards become
// clip(r / sqrt(var_R + eps), -clip_reward, clip_reward), var_R the running variance of each env's discounted
// return R <- gamma R + r (reset at episode ends). tests/web/test_train.py holds both equal to Python's.

// Mean and variance of a stream of batches (Chan et al.'s parallel update, as SB3's RunningMeanStd), float64.
export class RunningMeanStd {
  constructor(size, epsilon = 1e-4) {
    this.mean = new Float64Array(size);
    this.var = new Float64Array(size).fill(1);
    this.count = epsilon;
  }

  // rows: `count` rows of mean.length values, row-major.
  update(rows, count) {
    const size = this.mean.length;
    const total = this.count + count;
    for (let d = 0; d < size; d++) {
      let batchMean = 0;
      for (let r = 0; r < count; r++) batchMean += rows[r * size + d];
      batchMean /= count;
      let batchVar = 0;
      for (let r = 0; r < count; r++) batchVar += (rows[r * size + d] - batchMean) ** 2;
      batchVar /= count;
      const delta = batchMean - this.mean[d];
      // M2 = M2_a + M2_b + delta^2 n_a n_b / (n_a + n_b)
      const m2 = this.var[d] * this.count + batchVar * count + (delta ** 2 * this.count * count) / total;
      this.mean[d] += (delta * count) / total;
      this.var[d] = m2 / total;
    }
    this.count = total;
  }
}

const f32 = Math.fround;

// The normaliser of a run of `numEnvs` envs; `config` holds the run's normalize fields (norm_obs, norm_reward,
// clip_obs, clip_reward, norm_epsilon, gamma). The statistics move only in observe() and rewards().
export class VecNormalizer {
  constructor(config, obsSize, numEnvs) {
    Object.assign(this, { config, obsSize });
    this.obsRms = new RunningMeanStd(obsSize);
    this.retRms = new RunningMeanStd(1);
    this.returns = new Float64Array(numEnvs);
  }

  // Takes the observations an env step (or reset) returned into the statistics.
  observe(obs, rows) {
    if (this.config.norm_obs) this.obsRms.update(obs, rows);
  }

  // mean and std = sqrt(var + eps) in float32, what the bundle's normaliser holds.
  statistics() {
    const std = Float32Array.from(this.obsRms.var, (v) => Math.sqrt(v + this.config.norm_epsilon));
    return { mean: Float32Array.from(this.obsRms.mean), std };
  }

  // Normalised observations, float32 arithmetic as torch and onnxruntime compute them (each op rounded).
  normalize(obs) {
    const out = Float32Array.from(obs);
    if (!this.config.norm_obs) return out;
    const { mean, std } = this.statistics();
    const clip = this.config.clip_obs;
    for (let i = 0; i < out.length; i++) {
      const d = i % this.obsSize;
      out[i] = Math.min(Math.max(f32(f32(out[i] - mean[d]) / std[d]), -clip), clip);
    }
    return out;
  }

  // The step's rewards scaled by the discounted return's running std; the returns of ended episodes reset.
  rewards(rewards, dones) {
    const { norm_reward: normReward, gamma, clip_reward: clip, norm_epsilon: eps } = this.config;
    if (normReward) {
      this.returns.forEach((ret, env) => {
        this.returns[env] = ret * gamma + rewards[env]; // R <- gamma R + r
      });
      this.retRms.update(this.returns, this.returns.length);
    }
    const scale = Math.sqrt(this.retRms.var[0] + eps);
    const out = Float32Array.from(rewards, (r) => (normReward ? Math.min(Math.max(r / scale, -clip), clip) : r));
    dones.forEach((done, env) => {
      if (done) this.returns[env] = 0;
    });
    return out;
  }
}
