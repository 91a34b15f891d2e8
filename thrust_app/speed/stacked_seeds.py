"""Many seeds of one A2C or PPO run as one batch: N agents' weights stacked as rows of one (N, P) tensor,
their rollouts collected together and their updates computed at once.

Each seed keeps everything of its own: weights and optimizer state (a row of the stacked tensors; Adam and
RMSprop act element by element, so one optimizer over the rows steps each row as the seed's own optimizer
would), envs, minibatch order (its algorithm's generator) and sampling noise (a generator holding the stream
a lone run of that seed draws from torch's global one). What is shared is the work: every layer of the N
actor-critics is one batched matmul over the rows (StackedTowers), the algorithm's own loss (`ppo_loss`,
`a2c_loss`) is mapped over the seeds by `torch.func.vmap`, and one backward pass of the seeds' summed
losses gives every row its own gradient.

A seed of a batch follows the trajectory of a lone run of that seed (`thrust train` with `acting="numpy"`,
whose noise is drawn per rollout as here) up to float reassociation: tests/speed/test_stacked_seeds.py.
After every iteration each seed's algorithm is written back (`write_back`): evaluation, checkpoints,
export and resume see ordinary single-seed runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import torch
from torch.func import vmap

from ..algos import a2c, ppo
from ..algos.a2c import A2C, a2c_loss
from ..algos.base import Algorithm, Iteration, set_learning_rate
from ..algos.on_policy import OnPolicyAlgorithm
from ..algos.ppo import PPO, Minibatch, ppo_loss
from ..algos.rollout import compute_gae
from ..envs.batched import ArrayBatchedEnv, step_together
from ..envs.core import Box, Discrete
from ..envs.vec import BatchStep, VecEnv, episode_ended
from ..nets.flat_params import clip_grad_norm_, padded_sizes
from ..nets.policies import ActorCritic, TwinTowers, is_image
from .mlp_backward import Activation


def unbatchable_reason(algo: Algorithm, env: VecEnv) -> str | None:
    """Why the seeds of this run cannot train as one batch, or None when they can."""
    if type(algo) not in (PPO, A2C):
        return f"{algo.name} has no batched form; batched seeds train ppo and a2c"
    if algo.device.type != "cpu" or env.backend.name != "numpy":
        return "batched seeds step numpy envs on the CPU (--device cpu, env_backend numpy)"
    if is_image(algo.obs_shape) or algo.obs_parts or not isinstance(getattr(algo.net, "towers", None), TwinTowers):
        return "batched seeds need vector observations and policy and value MLPs of one shape (no vf_hidden)"
    if not isinstance(algo.action_space, Discrete | Box) or algo.config.use_sde:
        return "batched seeds need Discrete or Box actions without gSDE"
    if env.action_masks() is not None:
        return "the env offers action masks, which batched seeds do not apply"
    if getattr(algo.config, "target_kl", 0.0):
        return "target_kl stops each seed's epochs at its own time; batched seeds need target_kl 0"
    return None


def step_every_seed(envs: Sequence[VecEnv], actions: np.ndarray) -> BatchStep:
    """Each seed's env stepped on its row of `actions` (N, E, ...); the BatchStep's arrays (N, E, ...). Copies of one
    array-batched env (Thrust's CartPole, Pendulum, ...) step as one array step for all seeds (`step_together`:
    each env's own start-state draws, so each seed's env as its own `step` leaves it); others one env at a time."""
    if all(isinstance(env, ArrayBatchedEnv) and env.scalar_core is None for env in envs):
        step = step_together(envs, actions.reshape(-1, *actions.shape[2:]))
        return BatchStep(*(None if x is None else x.reshape(len(envs), -1, *x.shape[1:]) for x in step))
    steps = [env.step(action) for env, action in zip(envs, actions, strict=True)]
    return BatchStep(*(None if x[0] is None else np.stack(x) for x in zip(*steps, strict=True)))


class StackedTowers:
    """The actor-critic of N seeds at once: TwinTowers' layers and the heads as batched matmuls over the seeds'
    stacked flat rows (N, P), each product one `baddbmm` of N blocks. The same function as each seed's own
    `ActorCritic` (a test holds them equal), written for the stack as numpy_acting.py writes it for numpy."""

    def __init__(self, net: ActorCritic) -> None:
        self.net = net
        self.width = net.towers.hidden[0]
        #: The towers' activation under autograd, by the written-out passes' `activate_` (tanh as 2 sigmoid(2z) - 1
        #: on large CPU tensors, equal to within 2e-7; the batch's step 1.48x faster than with torch.tanh at 32 seeds,
        #: benches/stacked_update.py)
        self.activate = partial(Activation.apply, activation=net.towers.activation)
        self.n_layers = len(net.towers.weights)
        offsets = np.cumsum([0, *padded_sizes(list(net.parameters()))])
        #: Where each named parameter sits in a flat row: name -> (start, shape).
        self.layout = {name: (int(start), p.shape) for (name, p), start in zip(net.named_parameters(), offsets, strict=False)}

    def leaves(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every parameter of every seed, (N, *shape), a leaf that requires grad, its data a view of the stacked
        rows `flat` and its gradient a view of `flat.grad`."""
        leaves = {}
        for name, (start, shape) in self.layout.items():
            columns = slice(start, start + shape.numel())
            leaf = flat[:, columns].view(len(flat), *shape).detach().requires_grad_()
            leaf.grad = flat.grad[:, columns].view(len(flat), *shape)
            leaves[name] = leaf
        return leaves

    def tower(self, params: dict, obs: torch.Tensor, index: int) -> torch.Tensor:
        """Tower `index`'s features (N, B, h) of every seed's observations obs (N, B, d). The tower's first layer is
        its own rows of the shared input layer (policy rows first), so no (N, B, 2h) product is formed: slicing one
        per tower would zero-fill a gradient of that size per tower in the backward."""
        rows = slice(index * self.width, (index + 1) * self.width)
        weight = params["towers.input_layer.weight"][:, rows]  # (N, h, d)
        bias = params["towers.input_layer.bias"][:, rows].unsqueeze(1)  # (N, 1, h)
        x = self.activate(torch.baddbmm(bias, obs.flatten(2), weight.transpose(1, 2)))  # h = act(x W^T + b)
        for layer in range(self.n_layers):
            weight = params[f"towers.weights.{layer}"][:, index]  # (N, n_in, n_out)
            bias = params[f"towers.biases.{layer}"][:, index]  # (N, 1, n_out)
            x = self.activate(torch.baddbmm(bias, x, weight))  # h' = act(h W + b), each seed its own W, b
        return x

    def features(self, params: dict, obs: torch.Tensor, towers: tuple[int, ...] = (0, 1)) -> list[torch.Tensor]:
        """The policy (0) and/or value (1) features of every seed's observations obs (N, B, ...)."""
        return [self.tower(params, obs, index) for index in towers]

    def linear(self, params: dict, name: str, x: torch.Tensor) -> torch.Tensor:
        """nn.Linear `name` of every seed on its own x (N, B, in)."""
        weight, bias = params[f"{name}.weight"], params[f"{name}.bias"]
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))

    def heads(self, params: dict, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy head's output (N, B, A) and V(s) (N, B): what `ActorCritic.sample` computes before it draws."""
        pi_features, vf_features = self.features(params, obs)
        return self.linear(params, "pi_head", pi_features), self.linear(params, "vf_head", vf_features).squeeze(-1)

    def value(self, params: dict, obs: torch.Tensor) -> torch.Tensor:
        (vf_features,) = self.features(params, obs, (1,))
        return self.linear(params, "vf_head", vf_features).squeeze(-1)

    def gaussian(self, params: dict, head_out: torch.Tensor) -> torch.distributions.Normal:
        """Box actions: each seed's Gaussian, mean the head's output, std exp(log_std) of its own row."""
        std = params["log_std"].exp().unsqueeze(1)  # (N, 1, A)
        return torch.distributions.Normal(head_out, std.expand_as(head_out), validate_args=False)

    def evaluate_actions(self, params: dict, obs: torch.Tensor, actions: torch.Tensor):
        """`ActorCritic.evaluate_actions` of every seed: log pi(a|s), entropy and V(s), each (N, B)."""
        head_out, values = self.heads(params, obs)
        if self.net.discrete:
            log_prob, entropy = self.net.log_prob_entropy(head_out, actions)  # no parameters: any leading axes
        else:
            dist = self.gaussian(params, head_out)
            log_prob, entropy = dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)
        return log_prob, entropy, values


class StackedOnPolicy:
    """N seeds of one A2C or PPO config (the `algos`, each bound to its own env) trained as one batch;
    `noise_streams[k]` is the generator seed k's rollout noise comes from."""

    def __init__(self, algos: Sequence[OnPolicyAlgorithm], noise_streams: Sequence[torch.Generator]) -> None:
        self.algos, self.noise_streams = list(algos), list(noise_streams)
        first = self.algos[0]
        self.config, self.net = first.config, first.net
        self.towers = StackedTowers(self.net)
        #: (N, P): row k is seed k's flat parameters; `flat.grad` their gradients
        self.flat = torch.stack([algo.net.flat.detach() for algo in self.algos])
        self.flat.grad = torch.zeros_like(self.flat)
        #: The parameters the forwards read: leaves whose data and gradients are views into `flat` and `flat.grad`
        #: (FlatParameters' arrangement, stacked), so autograd adds into one buffer and nothing is gathered.
        self.params = self.towers.leaves(self.flat)
        self.optimizer = type(first.optimizer)([self.flat], **first.optimizer.defaults)
        self.gather_optimizer_state()

    # -- the seeds' own state, in and out ----------------------------------------------------------------
    def gather_optimizer_state(self) -> None:
        """Stack the seeds' optimizer states (a resumed seed brings its moments) into the batch's optimizer."""
        states = [algo.optimizer.state[algo.net.flat] for algo in self.algos]
        if states[0]:
            self.optimizer.state[self.flat] = {
                key: torch.stack([state[key] for state in states]) if states[0][key].dim() else states[0][key].clone()
                for key in states[0]
            }

    def write_back(self) -> None:
        """Copy each row (weights, optimizer state) to its seed's own algorithm."""
        state = self.optimizer.state[self.flat]
        with torch.no_grad():
            for k, algo in enumerate(self.algos):
                algo.net.flat.copy_(self.flat[k])
                algo.optimizer.state[algo.net.flat] = {
                    key: value[k].clone() if value.dim() else value.clone() for key, value in state.items()
                }

    # -- one iteration -----------------------------------------------------------------------------------
    def draw(self, head_out: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions and log-probabilities from the heads' output (N, E, A) and noise the seeds drew: Gumbel-max
        with Exp(1) noise for a categorical, mu + sigma * eps for the Gaussian (as numpy_rollout draws)."""
        if self.net.discrete:
            log_p = head_out.log_softmax(-1)
            action = (log_p - noise.log()).argmax(-1)  # argmax(log p - log E), E ~ Exp(1): a draw from p
            return action, log_p.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        dist = self.towers.gaussian(self.params, head_out)
        action = head_out + dist.stddev * noise  # a = mu + sigma * eps
        return action, dist.log_prob(action).sum(-1)

    def rollout_noise(self, n_steps: int, n_envs: int) -> torch.Tensor:
        """(N, T, E, A): each seed's noise for a rollout, drawn from its own stream as a lone run draws it."""
        width = self.net.pi_head.out_features
        draws = []
        for stream in self.noise_streams:
            noise = torch.empty(n_steps, n_envs, width)
            draws.append(noise.exponential_(generator=stream) if self.net.discrete else noise.normal_(generator=stream))
        return torch.stack(draws)

    @torch.no_grad()
    def collect(self, envs: Sequence[VecEnv], obs: torch.Tensor) -> dict:
        """n_steps of every seed's envs from `obs` (N, E, ...): the (T, N, E) stack of what a rollout records,
        the values after the last step ("last_values", (N, E)), the next observation ("obs_next") and the
        episodes that ended (numpy, (T, N, E))."""
        config, net, towers = self.config, self.net, self.towers
        noise = self.rollout_noise(config.n_steps, envs[0].num_envs)
        recorded: dict[str, list] = {key: [] for key in ("obs", "actions", "log_probs", "values", "rewards", "dones")}
        episodes: dict[str, list] = {"episode_returns": [], "episode_lengths": [], "episode_ended": []}
        for t in range(config.n_steps):
            head_out, values = towers.heads(self.params, obs)
            actions, log_probs = self.draw(head_out, noise[:, t])
            sent = actions.numpy() if net.discrete else torch.clamp(actions, net.low, net.high).numpy()
            step = step_every_seed(envs, sent)
            rewards = torch.from_numpy(step.reward)
            cut = torch.from_numpy(step.truncated & ~step.terminated)
            if cut.any():  # bootstrap a cut episode: r + gamma * V(s_final), as the reference does
                rewards = rewards + cut * (config.gamma * towers.value(self.params, torch.from_numpy(step.final_obs)))
            dones = torch.from_numpy(step.terminated | step.truncated)
            for key, item in zip(recorded, (obs, actions, log_probs, values, rewards, dones), strict=True):
                recorded[key].append(item)
            for key, item in zip(episodes, (step.episode_return, step.episode_length, episode_ended(step)), strict=True):
                episodes[key].append(item)
            obs = torch.from_numpy(step.obs)
        out = {key: torch.stack(items) for key, items in recorded.items()} | {k: np.stack(v) for k, v in episodes.items()}
        out["dones"] = out["dones"].float()
        out["last_values"], out["obs_next"] = towers.value(self.params, obs), obs
        return out

    def iteration(self, envs: Sequence[VecEnv], obs: Sequence[torch.Tensor]) -> list[Iteration]:
        """One iteration of every seed (collect, GAE, update); each seed's Iteration, its algorithm written back."""
        config = self.config
        set_learning_rate(self.optimizer, self.algos[0].learning_rate)  # the seeds share one schedule
        steps = self.collect(envs, torch.stack(list(obs)))
        n_steps, n, n_envs = steps["rewards"].shape
        advantages, returns = compute_gae(  # per env column: the seeds' envs side by side, (T, N * E)
            steps["rewards"].flatten(1), steps["values"].flatten(1), steps["dones"].flatten(1),
            steps["last_values"].flatten(), config.gamma, config.gae_lambda,
        )  # fmt: skip
        per_seed = lambda x: x.view(n_steps, n, n_envs, *x.shape[3:]).transpose(0, 1).flatten(1, 2)  # noqa: E731
        samples = [per_seed(x) for x in (steps["obs"], steps["actions"], steps["log_probs"], steps["values"])]
        samples += [per_seed(advantages.view(n_steps, n, n_envs)), per_seed(returns.view(n_steps, n, n_envs))]
        logs = self.update(*samples)
        self.write_back()
        iterations = []
        for k, algo in enumerate(self.algos):
            algo.num_timesteps += n_steps * n_envs
            ended = steps["episode_ended"][:, k]
            episodes = [steps[key][:, k][ended].tolist() for key in ("episode_returns", "episode_lengths")]
            iterations.append(Iteration(steps["obs_next"][k], n_steps * n_envs, *episodes, logs[k]))
        return iterations

    # -- the update --------------------------------------------------------------------------------------
    def update(self, obs, actions, old_log_probs, old_values, advantages, returns) -> list[dict[str, float]]:
        """PPO's epochs of minibatches or A2C's one step, on every seed's (N, T * E) samples; each seed's logs."""
        algo = self.algos[0]
        if isinstance(algo, A2C):
            loss = partial(a2c_loss, config=self.config)
            logged = [self.step(loss, obs, actions, advantages, returns)]
            names = a2c.LOG_NAMES
        else:
            loss = partial(ppo_minibatch_loss, clip_range=algo.clip_range, config=self.config)
            logged = []
            size = obs.shape[1]
            for _ in range(self.config.n_epochs):
                order = torch.stack([torch.randperm(size, generator=a.generator) for a in self.algos])  # (N, size)
                for start in range(0, size, self.config.batch_size):
                    index = order[:, start : start + self.config.batch_size]
                    batch = [x.gather(1, index.view(*index.shape, *[1] * (x.dim() - 2)).expand(-1, -1, *x.shape[2:]))
                             for x in (obs, actions, old_log_probs, old_values, advantages, returns)]  # fmt: skip
                    logged.append(self.step(loss, *batch))
            names = ppo.LOG_NAMES
        means = torch.stack(logged).mean(0)  # (N, logs)
        return [dict(zip(names, row.tolist(), strict=True)) for row in means]

    def step(self, loss: Callable, obs: torch.Tensor, actions: torch.Tensor, *samples: torch.Tensor) -> torch.Tensor:
        """One optimizer step of every seed on its own `loss(log_prob, entropy, value, *samples)` at its (obs,
        actions); returns the logs (N, k). The seeds' losses are summed: the gradient of the sum in row k is
        seed k's own gradient (no term couples two rows); each row is clipped to max_grad_norm by its own norm."""
        self.flat.grad.zero_()
        losses, logs = vmap(loss)(*self.towers.evaluate_actions(self.params, obs, actions), *samples)
        with warnings.catch_warnings():  # the rows' views are strided by P, as intended: autograd adds into them
            warnings.filterwarnings("ignore", "grad and param do not obey the gradient layout contract")
            losses.sum().backward()
        clip_grad_norm_(self.flat, self.config.max_grad_norm)
        self.optimizer.step()
        return logs.detach()


class StackedGreedy:
    """The deterministic policies of some of a batch's seeds (their rows in the batch) as one `evaluate` policy
    over all their episodes: rows k * episodes .. (k + 1) * episodes - 1 are the k-th seed's, acted on with its
    weights, every seed's rows in one stacked forward per step (`evaluate` passes the rows still playing)."""

    takes_rows = True

    def __init__(self, batch: StackedOnPolicy, episodes: int, seeds: list[int]) -> None:
        self.towers, self.seeds, self.episodes = batch.towers, len(seeds), episodes
        index = torch.tensor(seeds)
        self.params = {name: leaf.detach().index_select(0, index) for name, leaf in batch.params.items()}
        self.obs = np.zeros((self.seeds * episodes, *batch.algos[0].obs_shape), np.float32)

    @torch.no_grad()
    def __call__(self, obs: np.ndarray, rows: list[int]) -> np.ndarray:
        self.obs[rows] = obs  # the finished episodes' rows keep their last observation: computed, not used
        head_out, _ = self.towers.heads(self.params, torch.from_numpy(self.obs).view(self.seeds, self.episodes, -1))
        greedy = self.towers.net.greedy(head_out)  # argmax (discrete) or the mean clipped to the bounds (Box)
        actions = greedy[1] if isinstance(greedy, tuple) else greedy
        return actions.flatten(0, 1)[rows].numpy()


def ppo_minibatch_loss(log_prob, entropy, value, old_log_prob, old_value, advantages, returns, clip_range, config):
    """`ppo_loss` with the minibatch's samples as arguments (what vmap maps over)."""
    return ppo_loss(log_prob, entropy, value, Minibatch(old_log_prob, old_value, advantages, returns), clip_range, config)
