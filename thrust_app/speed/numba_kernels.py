"""Every numba kernel of the compiled updates (`update="numba"`): a ReLU MLP's forward and backward,
the gradient-norm clip, DQN's gradient (numba_dqn.py calls it), SAC's three steps (numba_sac.py) and A2C's
and PPO's gradient through the twin towers (numba_actor_critic.py).

They are the written-out passes of mlp_backward.py, dqn_backward.py, sac_backward.py and
actor_critic_backward.py with the loop around them compiled: each product is a direct BLAS call (`matmul`),
and the elementwise steps (bias, activation and its derivative, the losses' gradients) are loops, so an
update pays neither an op dispatch nor a Python line per step. On the zoo's 64-sample DQN batches that
dispatch is more than half of the torch update (benches/update_floor.py). The kernels read and write the
parameters' and gradients' own memory (numpy views: numba_nets.py, numba_actor_critic.py).

One file, and no constant read from another module: numba's on-disk cache (each kernel compiles once per
machine) is keyed on the file that defines a function, not on the functions it calls or the globals it
reads, so kernels spread over files could load stale code after an edit.

`matmul` calls the BLAS torch itself calls (MKL, in the x86 wheels) for wide products: on one thread of
this host it takes 187-195 us for a 256x256 by 256x256 product where numba's np.dot (SciPy's OpenBLAS)
takes 222-244. Narrow ones go the other way: OpenBLAS 1-5 us, MKL 5-17.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import llvmlite.binding
import numba
import numpy as np
import torch
from numba import types
from numba.typed import List

from ..nets.policies import SQUASH_EPSILON


def _cache_available() -> bool:
    """Whether numba can keep compiled kernels on disk here: some cache location (NUMBA_CACHE_DIR, the
    package's __pycache__, the user's cache folder) is writable. Without one the kernels compile in memory,
    in every process (DQN about 4 s, SAC about 7 s here)."""
    try:
        numba.njit(cache=True)(_cache_probe)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return False
    return True


def _cache_probe() -> int:
    return 0


#: Whether the kernels below are cached on disk (switches.py notes it when they are not).
CACHED = _cache_available()

#: A product whose right operand has at most this many columns goes to numba's np.dot (OpenBLAS): MKL
#: takes 5-17 us for the updates' 64- to 256-row products with 2 to 4 columns on one thread here, OpenBLAS 1-5.
OPENBLAS_COLUMNS = 8
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_ONE, _SQUASH_EPSILON = np.float32(1.0), np.float32(SQUASH_EPSILON)  # SAC's tanh correction in float32, as torch's


def sgemm_address() -> tuple[int, str]:
    """The address of a Fortran-interface sgemm and whose it is: torch's own BLAS where its CPU library
    exports one, else SciPy's (the one numba's np.dot calls)."""
    for library in sorted(Path(torch.__file__).parent.joinpath("lib").glob("libtorch_cpu.*")):
        try:
            return ctypes.cast(ctypes.CDLL(str(library)).sgemm_, ctypes.c_void_p).value, "torch's BLAS"
        except (OSError, AttributeError):
            continue
    from scipy.linalg import cython_blas

    capsule = ctypes.py_object(cython_blas.__pyx_capi__["sgemm"])
    ctypes.pythonapi.PyCapsule_GetName.restype = ctypes.c_char_p
    ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
    name = ctypes.pythonapi.PyCapsule_GetName(capsule)
    return ctypes.pythonapi.PyCapsule_GetPointer(capsule, name), "SciPy's BLAS"


#: The sgemm the kernels call for wide products, registered under this name for numba's linker (the kernels
#: refer to it by name, so their on-disk cache stays valid from one process to the next).
_SGEMM_ADDRESS, SGEMM_SOURCE = sgemm_address()
llvmlite.binding.add_symbol("thrust_sgemm", _SGEMM_ADDRESS)
# every argument is a pointer (Fortran passes by reference), given as an integer address
_sgemm = types.ExternalFunction("thrust_sgemm", types.void(*([types.intp] * 13)))


@numba.njit(cache=CACHED)
def unit_stride(operand):
    """Whether a float32 matrix is row- or column-major (what sgemm can read without a copy)."""
    return operand.strides[1] == 4 or operand.strides[0] == 4


@numba.njit(cache=CACHED)
def fortran_layout(operand):
    """(transpose flag, leading dimension) of a float32 matrix's memory read column-major: a row-major
    operand's memory is its transpose ("N"), a column-major one's is itself ("T"). The stride along a
    dimension of size 1 says nothing, so the leading dimension is at least the size BLAS requires."""
    if operand.strides[1] == 4:
        return ord("N"), max(operand.strides[0] // 4, operand.shape[1])
    return ord("T"), max(operand.strides[1] // 4, operand.shape[0])


@numba.njit(cache=CACHED)
def matmul(left, right, out):
    """out = left @ right of float32 matrices, `out` C-contiguous and each operand row- or column-major:
    OpenBLAS (np.dot) when `right` has at most OPENBLAS_COLUMNS columns, else `_sgemm`."""
    m, k = left.shape
    n = right.shape[1]
    if n <= OPENBLAS_COLUMNS or not (unit_stride(left) and unit_stride(right)):
        np.dot(left, right, out)
        return
    # Fortran reads memory column-major: out^T (n x m, leading dimension n) = right^T (n x k) left^T (k x m)
    sizes = np.empty(6, np.int32)  # n, m, k, then the leading dimensions of right, left and out
    transposes = np.empty(2, np.uint8)
    scalars = np.array([1.0, 0.0], np.float32)  # out = 1 * product + 0 * out
    sizes[0], sizes[1], sizes[2], sizes[5] = n, m, k, n
    transposes[0], sizes[3] = fortran_layout(right)
    transposes[1], sizes[4] = fortran_layout(left)
    size, flag, scalar = sizes.ctypes.data, transposes.ctypes.data, scalars.ctypes.data
    _sgemm(
        flag, flag + 1, size, size + 4, size + 8, scalar, right.ctypes.data, size + 12,
        left.ctypes.data, size + 16, scalar + 4, out.ctypes.data, size + 20,
    )  # fmt: skip


@numba.njit(cache=CACHED)
def forward(weights, biases, x, last_activation):
    """Every layer's output, the input first: [x, relu(x W1^T + b1), ..., x_{n-1} Wn^T + bn], the last
    one through the ReLU too when `last_activation`. `x` is a C-contiguous float32 matrix."""
    outputs = List()
    outputs.append(x)
    n_layers = len(weights)
    for index in range(n_layers):
        weight, bias = weights[index], biases[index]
        out = np.empty((x.shape[0], weight.shape[0]), np.float32)
        matmul(outputs[index], weight.T, out)
        activated = index < n_layers - 1 or last_activation
        for row in range(out.shape[0]):
            for col in range(out.shape[1]):
                value = out[row, col] + bias[col]
                out[row, col] = max(value, 0.0) if activated else value
        outputs.append(out)
    return outputs


@numba.njit(cache=CACHED)
def backward(weights, outputs, rows, grad, weight_grads, bias_grads, last_activation, write_weights, input_grad):
    """From `forward`'s outputs (their first `rows` rows are the ones the loss saw) and dL/d output (rows,
    out), write every layer's gradients (when `write_weights`) and return dL/d input (when `input_grad`;
    else the first layer's dL/dz). `grad` is consumed.

    Per layer y = relu(z), z = x W^T + b: dL/dz = dL/dy [y > 0], dL/dW = dL/dz^T x, dL/db = sum_rows dL/dz,
    dL/dx = dL/dz W."""
    n_layers = len(weights)
    for index in range(n_layers - 1, -1, -1):
        if index < n_layers - 1 or last_activation:
            out = outputs[index + 1]
            for row in range(rows):
                for col in range(grad.shape[1]):
                    if out[row, col] <= 0.0:
                        grad[row, col] = 0.0
        if write_weights:
            matmul(grad.T, outputs[index][:rows], weight_grads[index])
            bias_grad = bias_grads[index]
            bias_grad[:] = 0.0
            for row in range(rows):
                for col in range(grad.shape[1]):
                    bias_grad[col] += grad[row, col]
        if index > 0 or input_grad:
            product = np.empty((rows, weights[index].shape[1]), np.float32)
            matmul(grad, weights[index], product)
            grad = product
    return grad


@numba.njit(cache=CACHED)
def clip_grad_norm(grad, max_norm):
    """Scale the flat gradient in place so that its L2 norm is at most `max_norm` (flat_params.clip_grad_norm_'s
    rule: times min(1, max_norm / (norm + 1e-6)))."""
    total = 0.0
    for value in grad:
        total += value * value
    scale = max_norm / (np.sqrt(total) + 1e-6)
    if scale < 1.0:
        for index in range(grad.shape[0]):
            grad[index] *= scale


@numba.njit(cache=CACHED)
def dqn_gradient(obs, actions, rewards, next_obs, terminated, online, target, gamma, double, huber, flat_grad, max_norm):
    """Write the Q-net's gradients of the TD loss at the batch into its gradient views, clip their norm,
    return the loss. `online` is (weights, biases, weight grads, bias grads), `target` (weights, biases)."""
    n = obs.shape[0]
    weights, biases, weight_grads, bias_grads = online
    outputs = forward(weights, biases, np.concatenate((obs, next_obs)) if double else obs, False)
    next_values = forward(target[0], target[1], next_obs, False)[-1]
    q = outputs[-1]
    grad = np.zeros((n, q.shape[1]), np.float32)
    total = 0.0
    for row in range(n):
        if double:  # a' = argmax_a Q(s', a) (the first of equal values, as torch.argmax), valued by Q'
            best = 0
            for action in range(1, q.shape[1]):
                if q[n + row, action] > q[n + row, best]:
                    best = action
            next_q = next_values[row, best]
        else:
            next_q = next_values[row].max()
        target_value = rewards[row] + gamma * (1.0 - terminated[row]) * next_q  # y = r + gamma (1 - term) Q'(s', a')
        error = q[row, actions[row]] - target_value  # d = Q(s, a) - y
        if huber:  # mean(d^2 / 2 if |d| < 1 else |d| - 1/2); dL/dQ(s, a) = clamp(d, -1, 1) / n
            clipped = min(max(error, -1.0), 1.0)
            total += clipped * (error - 0.5 * clipped)
            grad[row, actions[row]] = clipped / n
        else:  # mean(d^2); dL/dQ(s, a) = 2 d / n
            total += error * error
            grad[row, actions[row]] = 2.0 * error / n
    backward(weights, outputs, n, grad, weight_grads, bias_grads, False, True, False)
    clip_grad_norm(flat_grad, max_norm)
    return total / n


@numba.njit(cache=CACHED)
def actor_sample(encoder, mu_head, log_std_head, obs, noise, bounds, log_std_limits):
    """`actor.sample(obs)` on the given noise eps ~ N(0, 1): (encoder outputs, raw log-std, std, tanh(u),
    action, log pi), with u = mu + std eps, the log-std clamped to `log_std_limits` and the action tanh(u)
    rescaled to `bounds` (low, high)."""
    low, high = bounds
    outputs = forward(encoder[0], encoder[1], obs, True)
    features = outputs[-1]
    n, dims = noise.shape
    mu = np.empty((n, dims), np.float32)
    raw_log_std = np.empty((n, dims), np.float32)
    matmul(features, mu_head[0].T, mu)
    matmul(features, log_std_head[0].T, raw_log_std)
    std = np.empty((n, dims), np.float32)
    squashed = np.empty((n, dims), np.float32)
    action = np.empty((n, dims), np.float32)
    log_prob = np.empty(n, np.float32)
    for row in range(n):
        total = 0.0
        for dim in range(dims):
            raw_log_std[row, dim] += log_std_head[1][dim]
            log_std = min(max(raw_log_std[row, dim], log_std_limits[0]), log_std_limits[1])
            std[row, dim] = np.exp(log_std)
            u = mu[row, dim] + mu_head[1][dim] + std[row, dim] * noise[row, dim]
            squashed[row, dim] = np.tanh(u)
            action[row, dim] = low[dim] + (squashed[row, dim] + 1.0) * 0.5 * (high[dim] - low[dim])
            # log N(u; mu, std) = -eps^2 / 2 - log std - log(2 pi) / 2, minus log(1 - tanh(u)^2 + 1e-6) (in float32,
            # as torch computes it: near |tanh u| = 1 the difference cancels digits)
            tanh_u = squashed[row, dim]
            correction = np.log(_ONE - tanh_u * tanh_u + _SQUASH_EPSILON)
            total += -0.5 * noise[row, dim] ** 2 - log_std - _HALF_LOG_2PI - correction
        log_prob[row] = total
    return outputs, raw_log_std, std, squashed, action, log_prob


@numba.njit(cache=CACHED)
def unit_actions(actions, unit_scaling):
    """Actions in the env's units as the critics read them, in [-1, 1]: (a - c) / h (QCritics.unit), float32."""
    centre, half = unit_scaling
    unit = np.empty_like(actions)
    for row in range(actions.shape[0]):
        for dim in range(actions.shape[1]):
            unit[row, dim] = (actions[row, dim] - centre[dim]) / half[dim]
    return unit


@numba.njit(cache=CACHED)
def critic_gradient(
    critics, target_critics, actor, obs, actions, rewards, next_obs, terminated, next_noise, bounds, unit_scaling,
    log_std_limits, alpha, gamma,
):  # fmt: skip
    """Write both critics' gradients of 1/2 sum_k mean((Q_k(s, a) - y)^2), y = r + gamma (1 - terminated)
    (min_k Q'_k(s', a') - alpha log pi(a' | s')) with a' the actor's sample at s'; return the loss. The critics
    read actions through `unit_actions`."""
    n = obs.shape[0]
    next_sample = actor_sample(actor[0], actor[1], actor[2], next_obs, next_noise, bounds, log_std_limits)
    next_inputs = np.concatenate((next_obs, unit_actions(next_sample[4], unit_scaling)), axis=1)
    next_q1 = forward(target_critics[0][0], target_critics[0][1], next_inputs, False)[-1]
    next_q2 = forward(target_critics[1][0], target_critics[1][1], next_inputs, False)[-1]
    target = np.empty(n, np.float32)
    for row in range(n):
        next_q = min(next_q1[row, 0], next_q2[row, 0]) - alpha * next_sample[5][row]
        target[row] = rewards[row] + gamma * (1.0 - terminated[row]) * next_q
    inputs = np.concatenate((obs, unit_actions(actions, unit_scaling)), axis=1)
    loss = 0.0
    for critic in critics:
        outputs = forward(critic[0], critic[1], inputs, False)
        grad = np.empty((n, 1), np.float32)
        total = 0.0
        for row in range(n):
            error = outputs[-1][row, 0] - target[row]
            total += error * error
            grad[row, 0] = error / n  # dL/dQ_k = (Q_k - y) / n
        loss += 0.5 * total / n
        backward(critic[0], outputs, n, grad, critic[2], critic[3], False, True, False)
    return loss


@numba.njit(cache=CACHED)
def actor_gradient(critics, actor, actor_grads, obs, sample, noise, bounds, unit_scaling, log_std_limits, alpha):
    """Write the actor's gradients of mean(alpha log pi(a | s) - min(Q1, Q2)(s, a)) at its sample a (from
    `actor_sample` at s, the same noise) through the critics as they are now; return the loss."""
    outputs, raw_log_std, std, squashed, action, log_prob = sample
    n, dims = action.shape
    inputs = np.concatenate((obs, unit_actions(action, unit_scaling)), axis=1)
    passes = (forward(critics[0][0], critics[0][1], inputs, False), forward(critics[1][0], critics[1][1], inputs, False))
    q1, q2 = passes[0][-1], passes[1][-1]
    loss = 0.0
    for row in range(n):
        loss += alpha * log_prob[row] - min(q1[row, 0], q2[row, 0])
    # d min(Q1, Q2) / d Q1 = [Q1 < Q2] + [Q1 = Q2] / 2 (torch.minimum's rule), and alike for Q2
    grad_unit = np.zeros((n, dims), np.float32)  # dL/d a_unit, the action as the critics read it
    for index in range(2):
        mine, other = passes[index][-1], passes[1 - index][-1]
        grad = np.empty((n, 1), np.float32)
        for row in range(n):
            share = 1.0 if mine[row, 0] < other[row, 0] else (0.5 if mine[row, 0] == other[row, 0] else 0.0)
            grad[row, 0] = -share / n
        critic = critics[index]
        grad_input = backward(critic[0], passes[index], n, grad, critic[2], critic[3], False, False, True)
        grad_unit += grad_input[:, obs.shape[1] :]
    # with u = mu + std eps, a = low + (tanh u + 1)(high - low) / 2, dL/da = dL/d a_unit / h, dL/d log pi = alpha / n:
    # dL/du = dL/d action (1 - tanh^2 u)(high - low) / 2 + (alpha / n) 2 tanh u (1 - tanh^2 u) / (1 - tanh^2 u + 1e-6);
    # dL/d log_std = (dL/du std eps - alpha / n) where the clamp passes it (raw log-std inside its bounds)
    grad_log_prob = alpha / n
    grad_u = np.empty((n, dims), np.float32)
    grad_log_std = np.empty((n, dims), np.float32)
    for row in range(n):
        for dim in range(dims):
            tanh_u = squashed[row, dim]
            half_range = 0.5 * (bounds[1][dim] - bounds[0][dim])
            slope = _ONE - tanh_u * tanh_u  # d tanh(u) / du
            through_log_prob = grad_log_prob * 2.0 * tanh_u * slope / (slope + _SQUASH_EPSILON)
            grad_u[row, dim] = grad_unit[row, dim] / unit_scaling[1][dim] * slope * half_range + through_log_prob
            inside = log_std_limits[0] <= raw_log_std[row, dim] <= log_std_limits[1]
            grad_log_std[row, dim] = (grad_u[row, dim] * std[row, dim] * noise[row, dim] - grad_log_prob) if inside else 0.0
    features = outputs[-1]
    encoder, mu_head, log_std_head = actor
    encoder_grads, mu_grads, log_std_grads = actor_grads
    for head_grads, grad in ((mu_grads, grad_u), (log_std_grads, grad_log_std)):
        matmul(grad.T, features, head_grads[0])
        head_grads[1][:] = grad.sum(axis=0)
    grad_features = np.empty((n, features.shape[1]), np.float32)
    through_log_std = np.empty((n, features.shape[1]), np.float32)
    matmul(grad_u, mu_head[0], grad_features)
    matmul(grad_log_std, log_std_head[0], through_log_std)
    grad_features += through_log_std
    backward(encoder[0], outputs, n, grad_features, encoder_grads[0], encoder_grads[1], True, True, False)
    return loss / n


# -- A2C's and PPO's gradient (numba_actor_critic.py) --------------------------------------------------
#: `loss` of `actor_critic_gradient`: which algorithm file's loss the gradient is of.
PPO_LOSS, A2C_LOSS = 0, 1


@numba.njit(cache=CACHED)
def activate(out, bias, tanh):
    """out = f(out + bias) in place: tanh, or ReLU."""
    for row in range(out.shape[0]):
        for col in range(out.shape[1]):
            value = out[row, col] + bias[col]
            out[row, col] = np.tanh(value) if tanh else max(value, 0.0)


@numba.njit(cache=CACHED)
def activation_backward(grad, out, tanh):
    """dL/dz in place of dL/d out, out = f(z): tanh' = 1 - out^2, relu' = [out > 0]."""
    for row in range(grad.shape[0]):
        for col in range(grad.shape[1]):
            if tanh:
                grad[row, col] *= 1.0 - out[row, col] * out[row, col]
            elif out[row, col] <= 0.0:
                grad[row, col] = 0.0


@numba.njit(cache=CACHED)
def column_sums(grad, out):
    """out = sum over the rows of grad (a bias's gradient)."""
    out[:] = 0.0
    for row in range(grad.shape[0]):
        for col in range(grad.shape[1]):
            out[col] += grad[row, col]


@numba.njit(cache=CACHED)
def towers_forward(towers, obs, tanh):
    """TwinTowers' layer outputs at `obs` (B, in), tower-major: the input layer's (2, B, h) and each later
    layer's (2, B, out), [0] the policy tower's, [1] the value tower's. `towers` is (input weight (2, h, in),
    input bias (2, h), (weight (2, in, out), ...), (bias (2, 1, out), ...)), at least one later layer."""
    input_weight, input_bias, weights, biases = towers
    n = obs.shape[0]
    first = np.empty((2, n, input_weight.shape[1]), np.float32)
    layers = List()
    for index in range(len(weights)):
        layers.append(np.empty((2, n, weights[index].shape[2]), np.float32))
    for tower in range(2):
        matmul(obs, input_weight[tower].T, first[tower])
        activate(first[tower], input_bias[tower], tanh)
        for index in range(len(weights)):
            x = first[tower] if index == 0 else layers[index - 1][tower]
            matmul(x, weights[index][tower], layers[index][tower])
            activate(layers[index][tower], biases[index][tower, 0], tanh)
    return first, layers


@numba.njit(cache=CACHED)
def towers_backward(towers, grads, obs, first, layers, grad, tanh):
    """Write every tower parameter's gradient from `towers_forward`'s outputs and dL/d features (2, B, h) (consumed).

    Per layer y = f(x W + b): dL/dW = x^T dL/dz, dL/db = sum_batch dL/dz, dL/dx = dL/dz W^T."""
    weights = towers[2]
    input_weight_grad, input_bias_grad, weight_grads, bias_grads = grads
    for tower in range(2):
        g = grad[tower]
        for index in range(len(weights) - 1, -1, -1):
            activation_backward(g, layers[index][tower], tanh)
            x = first[tower] if index == 0 else layers[index - 1][tower]
            matmul(x.T, g, weight_grads[index][tower])
            column_sums(g, bias_grads[index][tower, 0])
            below = np.empty((g.shape[0], weights[index].shape[1]), np.float32)
            matmul(g, weights[index][tower].T, below)
            g = below
        activation_backward(g, first[tower], tanh)
        matmul(g.T, obs, input_weight_grad[tower])
        column_sums(g, input_bias_grad[tower])


@numba.njit(cache=CACHED)
def normalized(advantages, normalize):
    """(A - mean A) / (std A + 1e-8) with torch's unbiased std when `normalize`, else A itself."""
    n = advantages.shape[0]
    if not normalize:
        return advantages
    mean = advantages.mean()
    spread = np.sqrt(((advantages - mean) ** 2).sum() / (n - 1))
    return ((advantages - mean) / (spread + 1e-8)).astype(np.float32)


@numba.njit(cache=CACHED)
def ppo_loss_gradient(log_prob, entropy, value, samples, settings, grads):
    """algos/ppo.py's `ppo_loss`: its logs (policy, value, entropy, approx KL, clip fraction), and dL/d log_prob,
    dL/d value and dL/d entropy (one number for every sample) into `grads`. With r = exp(log_prob - old):
    d(-mean min(r A, clip(r) A)) / d log_prob = -r A / n where the unclipped term is the min, else 0;
    d(vf_coef mean((V' - R)^2)) / dV = 2 vf_coef (V' - R) / n, times [|V - V_old| <= eps_vf] when
    V' = V_old + clip(V - V_old, -eps_vf, eps_vf); d(-ent_coef mean H) / dH = -ent_coef / n."""
    old_log_prob, old_value, advantages, returns = samples
    clip_range, clip_range_vf, vf_coef, ent_coef = settings[0], settings[1], settings[2], settings[3]
    n = log_prob.shape[0]
    advantages = normalized(advantages, settings[4] > 0.0 and n > 1)
    g_log_prob, g_value = grads[0], grads[1]
    low, high = np.float32(1.0 - clip_range), np.float32(1.0 + clip_range)  # float32 throughout, as torch
    logs = np.zeros(5)
    for row in range(n):
        log_ratio = log_prob[row] - old_log_prob[row]
        ratio = np.exp(log_ratio)
        surrogate = advantages[row] * ratio
        clipped = advantages[row] * min(max(ratio, low), high)  # equal to surrogate where the clip does not bite
        g_log_prob[row] = -surrogate / n if surrogate <= clipped else 0.0
        change = value[row] - old_value[row]
        if clip_range_vf > 0.0:
            error = old_value[row] + min(max(change, -clip_range_vf), clip_range_vf) - returns[row]
            g_value[row] = 2.0 * vf_coef * error / n if abs(change) <= clip_range_vf else 0.0
        else:
            error = value[row] - returns[row]
            g_value[row] = 2.0 * vf_coef * error / n
        logs[0] -= min(surrogate, clipped)
        logs[1] += error * error
        logs[2] += entropy[row]
        logs[3] += (ratio - 1.0) - log_ratio
        logs[4] += 1.0 if abs(ratio - 1.0) > clip_range else 0.0
    return logs / n, -ent_coef / n


@numba.njit(cache=CACHED)
def a2c_loss_gradient(log_prob, entropy, value, samples, settings, grads):
    """algos/a2c.py's `a2c_loss`: its logs (policy, value, entropy), and dL/d log_prob = -A / n,
    dL/dV = 2 vf_coef (V - R) / n into `grads`, and dL/dH = -ent_coef / n (one number for every sample)."""
    advantages, returns = samples[2], samples[3]
    vf_coef, ent_coef = settings[2], settings[3]
    n = log_prob.shape[0]
    advantages = normalized(advantages, settings[4] > 0.0)
    logs = np.zeros(3)
    for row in range(n):
        error = value[row] - returns[row]
        grads[0][row] = -advantages[row] / n
        grads[1][row] = 2.0 * vf_coef * error / n
        logs[0] -= advantages[row] * log_prob[row]
        logs[1] += error * error
        logs[2] += entropy[row]
    return logs / n, -ent_coef / n


@numba.njit(cache=CACHED)
def policy_outputs(features, pi_head, vf_head, log_std, actions, discrete):
    """V(s), log pi(a|s) and the entropy per sample from the towers' features (2, B, h), and the policy head's
    output as the backward needs it: log p per action (categorical over logits z: log p = z - logsumexp(z))
    or eps = (a - mu) / sigma (Gaussian: log p = sum(-eps^2 / 2 - log sigma - log(2 pi) / 2))."""
    n, hidden = features.shape[1], features.shape[2]
    head_out = np.empty((n, pi_head[0].shape[0]), np.float32)
    matmul(features[0], pi_head[0].T, head_out)
    value, log_prob, entropy = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
    inverse_std = np.exp(-log_std)
    for row in range(n):  # loops of scalars: a row's slice would allocate an array per op
        total = vf_head[1][0]
        for col in range(hidden):
            total += features[1, row, col] * vf_head[0][0, col]
        value[row] = total
        logits = head_out[row]
        logits += pi_head[1]
        if discrete:
            top = logits.max()
            total = 0.0
            for col in range(logits.shape[0]):
                total += np.exp(logits[col] - top)
            logits -= top + np.log(total)
            log_prob[row] = logits[int(actions[row, 0])]
            entropy[row] = -(np.exp(logits) * logits).sum()  # H = -sum p log p
        else:
            total, spread = 0.0, 0.0
            for col in range(logits.shape[0]):
                eps = (actions[row, col] - logits[col]) * inverse_std[col]
                logits[col] = eps
                total += -0.5 * eps * eps - log_std[col] - _HALF_LOG_2PI
                spread += 0.5 + _HALF_LOG_2PI + log_std[col]  # H = sum(1/2 + log(2 pi) / 2 + log sigma)
            log_prob[row], entropy[row] = total, spread
    return head_out, value, log_prob, entropy


@numba.njit(cache=CACHED)
def head_gradient(head_out, actions, entropy, g_log_prob, g_entropy, log_std, log_std_grad, discrete):
    """dL/d policy head output in place of `policy_outputs`' head_out, from dL/d log_prob and dL/d entropy
    (Gaussian: also writes dL/d log sigma). Categorical: d log p_a / dz = onehot(a) - p, dH/dz = -p (log p + H).
    Gaussian: d log p / d mu = eps / sigma, d log p / d log sigma = eps^2 - 1, dH / d log sigma = 1."""
    n = head_out.shape[0]
    if not discrete:
        log_std_grad[:] = n * g_entropy
    inverse_std = np.exp(-log_std)
    for row in range(n):
        for col in range(head_out.shape[1]):
            if discrete:
                log_p = head_out[row, col]
                head_out[row, col] = -np.exp(log_p) * (g_log_prob[row] + g_entropy * (log_p + entropy[row]))
            else:
                eps = head_out[row, col]
                log_std_grad[col] += g_log_prob[row] * (eps * eps - 1.0)
                head_out[row, col] = g_log_prob[row] * eps * inverse_std[col]
        if discrete:
            head_out[row, int(actions[row, 0])] += g_log_prob[row]


@numba.njit(cache=CACHED)
def heads_backward(features, head_grad, g_value, pi_head, vf_head, pi_grads, vf_grads):
    """Write both heads' gradients from dL/d head output and dL/dV; return dL/d features (2, B, h)."""
    feature_grad = np.empty(features.shape, np.float32)
    matmul(head_grad.T, features[0], pi_grads[0])
    column_sums(head_grad, pi_grads[1])
    matmul(head_grad, pi_head[0], feature_grad[0])
    vf_grads[1][0] = g_value.sum()
    vf_grads[0][:] = 0.0
    for row in range(features.shape[1]):
        for col in range(features.shape[2]):
            vf_grads[0][0, col] += g_value[row] * features[1, row, col]
            feature_grad[1, row, col] = g_value[row] * vf_head[0][0, col]
    return feature_grad


@numba.njit(cache=CACHED)
def actor_critic_gradient(net, grads, obs, actions, discrete, tanh, loss, samples, settings):
    """Write every gradient of ActorCritic `net` (towers, policy head (weight, bias), value head, log-std) of the
    A2C (`loss` A2C_LOSS) or PPO (PPO_LOSS) loss at (obs, actions) into `grads` (the same layout); return
    the loss's logs. `samples` are (old log-probs, old values, advantages, returns), `settings` (clip range,
    clip_range_vf, vf_coef, ent_coef, normalize_advantage)."""
    towers, pi_head, vf_head, log_std = net
    tower_grads, pi_grads, vf_grads, log_std_grad = grads
    first, layers = towers_forward(towers, obs, tanh)
    features = layers[-1]
    head_out, value, log_prob, entropy = policy_outputs(features, pi_head, vf_head, log_std, actions, discrete)
    per_sample = np.empty((2, obs.shape[0]), np.float32)  # dL/d log_prob, dL/dV
    if loss == PPO_LOSS:
        logs, g_entropy = ppo_loss_gradient(log_prob, entropy, value, samples, settings, per_sample)
    else:
        logs, g_entropy = a2c_loss_gradient(log_prob, entropy, value, samples, settings, per_sample)
    head_gradient(head_out, actions, entropy, per_sample[0], g_entropy, log_std, log_std_grad, discrete)
    feature_grad = heads_backward(features, head_out, per_sample[1], pi_head, vf_head, pi_grads, vf_grads)
    towers_backward(towers, tower_grads, obs, first, layers, feature_grad, tanh)
    return logs
