"""How much of a DQN / SAC / TD3 / PPO update is matmul arithmetic, and how much is everything else.

Times one gradient step of the zoo presets (DQN: 64 samples, 256x256 Q-net; SAC: 256 samples,
256x256 actor and critics; TD3: 256 samples, 400x300 actor and critics, timed over two steps, one
with the delayed actor step, and reported per step; PPO: one minibatch of HalfCheetah-v5's preset, 64
samples, 256x256 ReLU policy and value towers), each way the algorithm can compute it (`update="numba"`, the written-out
update compiled by numba; `update="handwritten"`, the written-out update in torch; `update="reference"`, the
reference), against its matmul floor: every matmul the step launched (mm, addmm, bmm, baddbmm, forward and
backward, recorded by a dispatch mode during one step) replayed alone on tensors of the same shapes and
strides, and the products the written-out update hands to numpy (mlp_backward.matmul), replayed in numpy and,
for comparison, in torch. The compiled update computes the same products as the written-out one; its floor
is the faster of their torch replay and their replay in one numba call through numba_kernels.matmul (as
its kernels call them). The floor bounds what any rewrite of the update could gain at the same
hyperparameters on one thread; the overhead share is 1 - floor / update. For the compiled update the bench
also replays the products right after the Adam steps, as an update meets them (Adam's memory traffic
evicts some of what they read). The floor's arithmetic rate (2 m k n flops per m x k by k x n product)
says how close its matmuls run to the core's peak.
Then one acting step (the behaviour policy's batch-1 forward, the env step, the replay-buffer write)
and each of its parts, in microseconds, as the reference (`acting="torch"`) and the fast path
(`acting="numpy"`, numpy_acting.py) take it. Last, what denormal floats cost: the zoo DQN trained twice
from one seed, iteration by iteration in turn, with denormals flushed to zero (what `resolve_device`
sets for the thread that trains) and without.

    python benches/update_floor.py [--rounds 5] [--only ppo]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numba
import numpy as np
import torch
from numba import literal_unroll
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trainer_throughput import build

import thrust_app.speed.mlp_backward as mlp_backward
from thrust_app.algos.rollout import compute_gae
from thrust_app.speed.mlp_backward import adam_step
from thrust_app.speed.numba_kernels import SGEMM_SOURCE
from thrust_app.speed.numba_kernels import matmul as compiled_matmul
from thrust_app.speed.numpy_exploration import NumpyExploration
from thrust_app.speed.switches import install_update
from thrust_app.training.device import resolve_device

MATMULS = {torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm, torch.ops.aten.baddbmm}
ADDING = {torch.ops.aten.addmm, torch.ops.aten.baddbmm}  # input + left @ right


def best_ms(fn, calls: int, rounds: int) -> float:
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e3


def stand_in(value: object) -> object:
    """A tensor of the same shape, strides and dtype with fresh values; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype).normal_()
    return value


def numpy_stand_in(array: np.ndarray) -> np.ndarray:
    """An array of the same shape, dtype and memory order with fresh values."""
    order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    return np.asarray(np.random.standard_normal(array.shape), dtype=array.dtype, order=order)


class MatmulRecorder(TorchDispatchMode):
    """Records every matmul dispatched while active (autograd's backward ones included) as a call that
    replays it on stand-in tensors, and the products mlp_backward.matmul hands to numpy as numpy calls on
    stand-in arrays; counts the other ops (optimizer kernels apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Callable[[], object]] = []
        #: (left, right) of every product, in order, on stand-in tensors
        self.products: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.numpy_operands: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.flops = 0
        self.other_ops = 0

    def __enter__(self):
        self.numpy_matmul = mlp_backward.numpy_matmul
        mlp_backward.numpy_matmul = self.record_numpy
        return super().__enter__()

    def __exit__(self, *exc):
        mlp_backward.numpy_matmul = self.numpy_matmul
        return super().__exit__(*exc)

    def record_numpy(self, left: np.ndarray, right: np.ndarray, out: np.ndarray) -> None:
        operands = (numpy_stand_in(left), numpy_stand_in(right), numpy_stand_in(out))
        self.numpy_operands.append(operands)
        self.products.append(tuple(torch.from_numpy(array) for array in operands[:2]))
        self.calls.append(lambda: np.matmul(operands[0], operands[1], out=operands[2]))
        self.flops += 2 * left.size * right.shape[1]
        self.numpy_matmul(left, right, out)

    def numpy_products(self) -> Callable[[], None]:
        """The products handed to numpy, replayed."""
        operands = self.numpy_operands
        return lambda: [np.matmul(left, right, out=out) for left, right, out in operands]

    def numpy_products_in_torch(self) -> Callable[[], None]:
        """The products handed to numpy, as torch.mm would compute them on the same memory."""
        tensors = [tuple(torch.from_numpy(array) for array in operands) for operands in self.numpy_operands]
        return lambda: [torch.mm(left, right, out=out) for left, right, out in tensors]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in MATMULS:
            replay_args, replay_kwargs = [stand_in(a) for a in args], {k: stand_in(v) for k, v in kwargs.items()}
            self.calls.append(lambda: func(*replay_args, **replay_kwargs))
            left, right = args[1:3] if func.overloadpacket in ADDING else args[:2]  # addmm's input comes first
            self.products.append((stand_in(left), stand_in(right)))
            self.flops += 2 * left.numel() * right.shape[-1]  # 2 (batch) m k n
        elif "adam" not in func.__name__:
            self.other_ops += 1
        return func(*args, **kwargs)


def record(step: Callable[[], object]) -> MatmulRecorder:
    """The matmuls and the count of other ops of one call of `step`."""
    recorder = MatmulRecorder()
    with recorder:
        step()
    return recorder


#: The replay's products of batched stand-ins are strided views; numba warns when it compiles the np.dot branch
#: of `matmul` for them, which the wide products never take.
warnings.filterwarnings("ignore", category=numba.NumbaPerformanceWarning)


@numba.njit
def replay_products(products) -> None:
    for product in literal_unroll(products):  # (left, right, out); a heterogeneous tuple is unrolled
        compiled_matmul(product[0], product[1], product[2])


def compiled_replayer(products: list[tuple[torch.Tensor, torch.Tensor]]) -> Callable[[], None]:
    """The products replayed as the compiled updates compute them: numba_kernels.matmul (each product
    by the BLAS faster at its shape, called directly) in one numba call, on the same shapes and layouts; a batched
    product (the twin towers' bmm) as its matrix products, as the compiled A2C/PPO update computes it."""
    matrices = [
        pair for left, right in products for pair in (zip(left, right, strict=True) if left.dim() == 3 else [(left, right)])
    ]
    operands = tuple(
        (left.numpy(), right.numpy(), np.empty((left.shape[0], right.shape[1]), np.float32)) for left, right in matrices
    )
    return lambda: replay_products(operands)


def replayer(calls: list[Callable[[], object]]) -> Callable[[], None]:
    @torch.no_grad()
    def replay() -> None:
        for call in calls:
            call()

    return replay


#: Each algorithm's forms of the update (TD3 has its reference only).
UPDATES = {
    "dqn": ("numba", "handwritten", "reference"),
    "sac": ("numba", "handwritten", "reference"),
    "td3": ("reference",),
    "ppo": ("numba", "handwritten", "reference"),
}
#: Updates per timed step: TD3's actor (and targets) move every second critic step (policy_delay 2).
STEPS = {"td3": 2}


def ready_agent(algo: str, update: str):
    """The algorithm's zoo preset with its update in the `update` form, ready to time `agent.train_step`: DQN's, SAC's
    and TD3's with 2,048 steps in the buffer; PPO's on HalfCheetah-v5 after one rollout, `train_step` one minibatch."""
    if algo != "ppo":
        agent, env, io, obs = build(algo, torch.device("cpu"), learning_starts=1, update=update)
        while agent.buffer.size < 2048:
            obs = agent.iteration(env, io, obs).obs
        return agent, env, io, obs
    agent, env, io, obs = build(algo, torch.device("cpu"), env_id="HalfCheetah-v5", update=update)
    rollout, obs = agent.collect(env, io, obs)
    config = agent.config
    advantages, returns = compute_gae(
        rollout.rewards, rollout.values, rollout.dones, rollout.last_values, config.gamma, config.gae_lambda
    )
    (minibatch, _), *_ = agent.minibatches(rollout, advantages, returns)
    agent.train_step = partial(agent.step_minibatch, minibatch)
    return agent, env, io, obs


def adam_steps(agent) -> Callable[[], None]:
    """Every Adam step of one timed step (`adam_step` on each of the agent's Adam optimizers; TD3's
    two steps take the critics' twice and the actor's once)."""
    optimizers = [part for part in agent.stateful_parts().values() if isinstance(part, torch.optim.Adam)]
    if agent.name == "td3":
        optimizers.append(agent.critic_opt)
    return lambda: [adam_step(optimizer) for optimizer in optimizers]


def timed_step(agent) -> Callable[[], object]:
    """One timed step: an update, or TD3's two (one of them with the actor step)."""
    steps = STEPS.get(agent.name, 1)
    return agent.train_step if steps == 1 else lambda: [agent.train_step() for _ in range(steps)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=list(UPDATES), help="these algorithms only (no denormal test)")
    args = parser.parse_args()
    resolve_device("cpu", torch_threads=1)  # one torch thread, one BLAS thread for numpy
    for algo, updates in UPDATES.items():
        if args.only and algo not in args.only:
            continue
        calls = {"dqn": 100, "sac": 20, "td3": 5, "ppo": 100}[algo]
        per = STEPS.get(algo, 1)
        for update in updates:
            agent, env, io, obs = ready_agent(algo, update)
            if update == "numba":
                compiled_floor(agent, calls, args.rounds)
                continue
            recorder = record(timed_step(agent))
            update_ms = best_ms(timed_step(agent), calls, args.rounds) / per
            floor = best_ms(replayer(recorder.calls), calls, args.rounds) / per
            adam = best_ms(adam_steps(agent), calls, args.rounds) / per
            rest = update_ms - floor - adam
            print(
                f"{algo} update={update} (per update): update {update_ms:.2f} ms = "
                f"{len(recorder.calls) / per:g} matmuls {floor:.2f} ms + "
                f"Adam steps {adam:.2f} ms + {recorder.other_ops / per:g} other ops {rest:.2f} ms "
                f"({rest / recorder.other_ops * per * 1e3:.1f} us each); overhead {1 - floor / update_ms:.0%} (goal <= 25%); "
                f"the matmuls at {recorder.flops / per / floor / 1e6:.0f} GFLOP/s"
            )
            if recorder.numpy_operands:
                numpy_ms = best_ms(recorder.numpy_products(), calls, args.rounds)
                in_torch = best_ms(recorder.numpy_products_in_torch(), calls, args.rounds)
                print(
                    f"  of the matmuls, {len(recorder.numpy_operands)} with a narrow right operand ran in numpy: "
                    f"{numpy_ms * 1e3:.0f} us, where torch.mm takes {in_torch * 1e3:.0f} us (mlp_backward.matmul)"
                )
        if algo in ("td3", "ppo"):  # TD3's acting has its torch form only; PPO's acting is timed by mujoco_speed.py
            continue
        agent.apply_schedules(0.0)  # DQN's epsilon at its final value: most steps act greedily, through the net
        print(f"{algo}: acting step, acting=torch (goal <= 60 us): " + acting_step(agent, env, io, obs, args.rounds))
        print(f"{algo}: acting step, acting=numpy (goal <= 60 us): " + fast_acting_step(agent, env, obs, args.rounds))
    if not args.only:
        print(f"dqn, zoo preset, 40 iterations of 256 steps and 128 updates: {denormal_cost(40, args.rounds)}")


def compiled_floor(agent, calls: int, rounds: int) -> None:
    """The compiled update (`update="numba"`) against its floor: the products of the written-out update
    (the compiled kernels compute the same ones, in the same layouts), replayed by torch and by one numba call;
    the overhead share is taken against the faster of the two."""
    if agent.speed.update != "numba":
        raise SystemExit(f"{agent.name}: update=numba did not take: {'; '.join(agent.notes)}")
    install_update(agent, "handwritten")  # record the written-out update's products, then time the compiled one
    recorder = record(agent.train_step)
    install_update(agent, "numba")
    compiled_replay, adam = compiled_replayer(recorder.products), adam_steps(agent)

    def replay_after_adam() -> None:  # the products as an update meets them: after an Adam step's memory traffic
        adam()
        compiled_replay()

    timings = {
        "update": agent.train_step,
        "torch": replayer(recorder.calls),
        "compiled": compiled_replay,
        "adam": adam,
        "after adam": replay_after_adam,
    }
    for fn in timings.values():  # the first numba call compiles
        fn()
    ms = {name: best_ms(fn, calls, rounds) for name, fn in timings.items()}
    floor = min(ms["torch"], ms["compiled"])
    rest = ms["update"] - floor - ms["adam"]
    print(
        f"{agent.name} update=numba: update {ms['update']:.2f} ms = {len(recorder.products)} matmuls {floor:.2f} ms "
        f"(replayed by torch {ms['torch']:.2f}, compiled {ms['compiled']:.2f}) + Adam steps {ms['adam']:.2f} ms + the "
        f"rest {rest:.2f} ms; overhead {1 - floor / ms['update']:.0%} (goal <= 25%; {1 - ms['torch'] / ms['update']:.0%} "
        f"against the torch replay); wide products by {SGEMM_SOURCE}\n"
        f"  the compiled replay right after the Adam steps, as an update meets its products: "
        f"{ms['after adam'] - ms['adam']:.2f} ms (alone {ms['compiled']:.2f}); with the Adam steps, the least overhead "
        f"an update that steps Adam can have: {1 - floor / ms['after adam']:.0%}"
    )


def denormal_cost(iterations: int, rounds: int) -> str:
    """Two zoo DQN runs from one seed, their iterations alternating, one flushing denormals and one not: the
    median iteration after warm-up, Adam's step at the end, and the denormal first moments it meets."""
    runs = {flush: build("dqn", torch.device("cpu")) for flush in (True, False)}
    times: dict[bool, list[float]] = {True: [], False: []}
    for iteration in range(iterations):
        for flush, (agent, env, io, obs) in runs.items():
            torch.set_flush_denormal(flush)
            start = time.perf_counter()
            obs = agent.iteration(env, io, obs).obs
            if iteration >= iterations // 2:  # the second half: learning for a while, denormals accumulated
                times[flush].append(time.perf_counter() - start)
            runs[flush] = (agent, env, io, obs)
    parts = []
    for flush, (agent, *_) in runs.items():
        torch.set_flush_denormal(flush)
        moments = agent.optimizer.state[agent.q_net.flat]["exp_avg"]
        denormal = int(((moments != 0) & (moments.abs() < torch.finfo(moments.dtype).tiny)).sum())
        adam = best_ms(adam_steps(agent), 100, rounds)  # last: a flushed step would zero the denormals it reads
        parts.append(
            f"{'flushed' if flush else 'not flushed'}: iteration {np.median(times[flush]) * 1e3:.1f} ms, Adam step "
            f"{adam * 1e3:.0f} us, {denormal:,} of {moments.numel():,} first moments denormal"
        )
    torch.set_flush_denormal(True)
    return "; ".join(parts)


def acting_step(agent, env, io, obs: torch.Tensor, rounds: int) -> str:
    """Microseconds of one acting step as the reference loop takes it (the behaviour policy's forward
    without autograd, the vec-env step through EnvIO, the replay-buffer write), and of each part."""
    with torch.no_grad():
        action = agent.explore(obs)
    step = io.step(env, action)

    @torch.no_grad()
    def act() -> None:
        agent.explore(obs)

    return time_parts(
        rounds,
        act,
        lambda: io.step(env, action),
        lambda: agent.buffer.add(obs, action, step.reward, step.final_obs, step.terminated),
    )


def fast_acting_step(agent, env, obs: torch.Tensor, rounds: int) -> str:
    """The same step as the fast acting path takes it (speed/numpy_exploration.py): the explorer's numpy
    forward on pre-drawn noise, the env's own numpy step, the buffer's numpy write."""
    exploration = NumpyExploration(agent)
    explorer, (draw,) = exploration.explorer(), exploration.draws(1, env.num_envs)
    obs_array = obs.numpy()
    action = explorer(obs_array, *draw)
    step = env.step(action)
    return time_parts(
        rounds,
        lambda: explorer(obs_array, *draw),
        lambda: env.step(action),
        lambda: agent.buffer.add_arrays(obs_array, action, step.reward, step.final_obs, step.terminated),
    )


def time_parts(rounds: int, act: Callable[[], object], env_step: Callable[[], object], write: Callable[[], object]) -> str:
    """'W us = forward A + env step B + buffer write C': the three parts run back to back, then each alone."""

    def whole() -> None:
        act()
        env_step()
        write()

    parts = {
        name: best_ms(fn, 2000, rounds) * 1e3
        for name, fn in [("whole", whole), ("forward", act), ("env step", env_step), ("buffer write", write)]
    }
    return f"{parts.pop('whole'):.0f} us = " + " + ".join(f"{name} {us:.0f}" for name, us in parts.items())


if __name__ == "__main__":
    main()
