"""numpy's default generator in plain Python: the start states gymnasium's envs draw, without numpy.

gymnasium seeds an env's `np_random` as `np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))`
and its classic-control envs draw their start states with `np_random.uniform`. A core that is a gymnasium
env's twin (CartPole, Pendulum, Acrobot, MountainCar) draws from `NumpyRandom` instead of `random.Random`, so
`core.reset(seed=s)` starts where `gymnasium.make(...).reset(seed=s)` starts, in Python and in the browser's
Pyodide alike (numpy does not load there). tests/envs/test_core.py holds the draws equal to numpy's.

The algorithms as numpy writes them: SeedSequence's hash-mixing of the seed's 32-bit words into a pool of 4 and
its expansion to PCG64's 256-bit seed (O'Neill's PCG: a 128-bit LCG, XSL-RR output), doubles from the top 53 bits.
"""

from __future__ import annotations

import itertools
import secrets

MASK32 = 0xFFFF_FFFF
MASK64 = 0xFFFF_FFFF_FFFF_FFFF
MASK128 = (1 << 128) - 1
#: SeedSequence's hashing constants (numpy/random/bit_generator.pyx)
INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
MIX_MULT_L, MIX_MULT_R = 0xCA01F9DD, 0x4973F715
POOL_SIZE = 4
#: PCG64's LCG multiplier
PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645


def seed_words(seed: int) -> list[int]:
    """The seed as SeedSequence reads an int: its 32-bit words, least significant first (0: one word)."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (numpy's SeedSequence takes no negative seed), got {seed}")
    words = [seed & MASK32]
    while seed >> 32:
        seed >>= 32
        words.append(seed & MASK32)
    return words


def seed_pool(words: list[int]) -> list[int]:
    """SeedSequence's entropy pool of 4 words: each word hashed in, then every word mixed into every other."""
    hash_const = INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * MULT_A) & MASK32
        value = (value * hash_const) & MASK32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        result = (MIX_MULT_L * x - MIX_MULT_R * y) & MASK32
        return result ^ (result >> 16)

    pool = [hashmix(words[i] if i < len(words) else 0) for i in range(POOL_SIZE)]
    for src in range(POOL_SIZE):
        for dst in range(POOL_SIZE):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for word in words[POOL_SIZE:]:
        for dst in range(POOL_SIZE):
            pool[dst] = mix(pool[dst], hashmix(word))
    return pool


def generate_state(pool: list[int], n_words64: int) -> list[int]:
    """SeedSequence.generate_state(n, np.uint64): the pool cycled through a second hash, paired into 64-bit words."""
    hash_const, words32 = INIT_B, []
    for value in itertools.islice(itertools.cycle(pool), 2 * n_words64):
        value ^= hash_const
        hash_const = (hash_const * MULT_B) & MASK32
        value = (value * hash_const) & MASK32
        words32.append(value ^ (value >> 16))
    return [words32[2 * i] | (words32[2 * i + 1] << 32) for i in range(n_words64)]


class NumpyRandom:
    """`np.random.default_rng(seed)`'s stream: `seed`, `random` and `uniform` as `random.Random` names them."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """PCG64 seeded as numpy seeds it from SeedSequence(seed): state from words 0-1, increment from 2-3; no
        seed: 128 bits of the OS's entropy, as SeedSequence(None) takes."""
        seed = secrets.randbits(128) if seed is None else seed
        s0, s1, i0, i1 = generate_state(seed_pool(seed_words(seed)), 4)
        self.increment = (((i0 << 64) | i1) << 1 | 1) & MASK128
        self.state = 0
        self._advance()
        self.state = (self.state + ((s0 << 64) | s1)) & MASK128
        self._advance()

    def _advance(self) -> None:
        self.state = (self.state * PCG_MULTIPLIER + self.increment) & MASK128  # s' = a s + c (mod 2^128)

    def next_uint64(self) -> int:
        """One 64-bit output: step the LCG, then XSL-RR (the state's halves xored, rotated by its top 6 bits)."""
        self._advance()
        xored, rotation = ((self.state >> 64) ^ self.state) & MASK64, self.state >> 122
        return ((xored >> rotation) | (xored << (64 - rotation))) & MASK64

    def random(self) -> float:
        """A double in [0, 1) from the top 53 bits, as numpy's `random()`."""
        return (self.next_uint64() >> 11) * (1.0 / 9007199254740992.0)

    def uniform(self, low: float, high: float) -> float:
        """low + (high - low) * u, as numpy's `uniform` computes each draw."""
        return low + (high - low) * self.random()
