"""Thrust: train small RL policies with PyTorch, export them to ONNX, play them back in the browser.

Importing Thrust registers its environments with gymnasium when gymnasium is installed; under
Pyodide (no numpy, no gymnasium) only the pure-Python cores in `thrust_app.envs.core` are used.
"""

__version__ = "0.1.0"


def _register_with_gymnasium() -> None:
    try:
        import gymnasium  # noqa: F401  (present? then register)
    except ImportError:  # the browser, or a bare install: the cores still work
        return
    from .envs.gym_adapter import register_envs

    register_envs()


_register_with_gymnasium()
