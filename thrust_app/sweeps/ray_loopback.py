"""Ray on this machine's loopback only: the settings Thrust gives every Ray process it starts (a sweep's
local Ray, the nodes of a test cluster), so that none of them reaches an address outside 127.0.0.0/8.

Ray, left alone, finds its node address by a UDP "connect" towards a public DNS server (no packet is
sent, but the address is the machine's network one), rewrites 127.0.0.1 given by the user into that
address, and its usage module asks the Azure/GCP/AWS metadata addresses (169.254.169.254,
metadata.google.internal) which cloud it runs on, even with usage stats off. Here:

- `pinned_to_loopback()` makes this process's own-address lookup answer 127.0.0.1 (Ray's
  `services.node_ip_address_from_perspective` without a peer; with a peer, as Ray does it);
- `loopback_environment()` is what Ray's child processes get: the same lookup answering 127.0.0.1
  (Ray's cluster switch off: a local Ray's behaviour), usage stats off, and HTTP(S) proxies pointing
  at a closed loopback port so the cloud-metadata requests fail at once, locally.

`python -m thrust_app.sweeps.ray_loopback start ...` is `ray start` with both, for clusters whose nodes all
run on this machine (tests, benches, trying a multi-node sweep on one machine):

    python -m thrust_app.sweeps.ray_loopback start --head --port 6379 --node-ip-address 127.0.0.1 --num-cpus 1
    python -m thrust_app.sweeps.ray_loopback start --address 127.0.0.1:6379 --num-cpus 1
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOOPBACK = "127.0.0.1"
#: A loopback port nothing listens on (discard): where Ray's processes send their HTTP(S) requests.
CLOSED_PORT_PROXY = f"http://{LOOPBACK}:9"


def loopback_environment() -> dict[str, str]:
    """Environment variables for the Ray processes started from here (see the module docstring)."""
    return {
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "http_proxy": CLOSED_PORT_PROXY,
        "https_proxy": CLOSED_PORT_PROXY,
        "no_proxy": f"{LOOPBACK},localhost,::1",
    }


@contextmanager
def pinned_to_loopback() -> Iterator[None]:
    """While inside, this process's Ray finds its own address as 127.0.0.1 without any probe."""
    from ray._private import services

    lookup = services.node_ip_address_from_perspective

    def from_perspective(address: str | None = None) -> str:
        return lookup(address) if address else LOOPBACK

    services.node_ip_address_from_perspective = from_perspective
    try:
        yield
    finally:
        services.node_ip_address_from_perspective = lookup


def main() -> None:
    """`ray start` (or any `ray` command) on loopback only."""
    if any(arg.startswith("--address") for arg in sys.argv[1:]):
        os.environ.setdefault("RAY_AUTH_MODE", "token")  # a joining node authenticates with ~/.ray/auth_token
    # Ray reads its cluster switch at import: on here (a node may join), off for its child processes.
    from ray.scripts.scripts import main as ray_main

    os.environ.update(loopback_environment())
    sys.argv = ["ray", *sys.argv[1:]]
    with pinned_to_loopback():
        ray_main()


if __name__ == "__main__":
    main()
