"""Thrust's pure-Python env cores as a wheel, built on demand for Pyodide.

The browser runs exactly the desktop's env source: `thrust_app/__init__.py`, `thrust_app/envs/__init__.py`
and `thrust_app/envs/core/`, and the bundle manifest's schema (`thrust_app/interop/manifest.py`). They are packed
into a standard `py3-none-any` wheel (zip, METADATA, WHEEL, RECORD) in memory; no build tool or download
is needed, so it works offline.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

from ..version import __version__

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: Files of the wheel, relative to the package root; nothing here may import numpy, gymnasium or torch.
CORE_FILES = [
    "__init__.py",
    "version.py",
    "envs/__init__.py",
    "interop/__init__.py",
    "interop/manifest.py",
    *sorted(str(p.relative_to(PACKAGE_ROOT)) for p in (PACKAGE_ROOT / "envs" / "core").glob("*.py")),
]


def wheel_name() -> str:
    return f"thrust_app-{__version__}-py3-none-any.whl"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_core_wheel() -> bytes:
    """The wheel's bytes. Deterministic: the same sources give the same bytes."""
    dist_info = f"thrust_app-{__version__}.dist-info"
    files: dict[str, bytes] = {f"thrust_app/{rel}": (PACKAGE_ROOT / rel).read_bytes() for rel in CORE_FILES}
    files[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: thrust_app\nVersion: {__version__}\n"
        "Summary: Thrust's pure-Python environment cores (browser build)\n"
    ).encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: thrust\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist_info}/top_level.txt"] = b"thrust_app\n"
    record = [_record_line(name, data) for name, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            wheel.writestr(info, data)
    return buffer.getvalue()
