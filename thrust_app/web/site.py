"""`thrust web build OUT [BUNDLE...]`: the player as a static site, for any static file host.

The folder holds what `thrust web` serves, as plain files: the page (web/), the few npm files it
loads (Pyodide's runtime and standard library, onnxruntime-web's WebGPU/wasm build, TensorFlow.js and
protobufjs for the Train mode), Thrust's core wheel with `py/index.json`, the Train mode's presets and
ONNX templates under `py/`, the chosen bundles under `export/` and a static `export/index.json`; and, only
when a chosen bundle is for a MuJoCo robot, MuJoCo's wasm build (`mujoco-js`, ~11 MB) with gymnasium's XML of
those robots under `py/mujoco/`.
Every URL in the page is relative, so the folder works under a sub-path (GitHub Pages, an S3
prefix, `python -m http.server` from a parent folder) with no Thrust process behind it.

A static host sends no cross-origin-isolation headers, so onnxruntime-web runs single-threaded
there, which is how the player runs it anyway (`ort.env.wasm.numThreads = 1`), and TensorFlow.js's
wasm backend takes its single-threaded SIMD build.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from ..envs.core import playing_locomotion
from ..envs.mujoco_physics import gymnasium_xml
from ..interop.bundle import BundleError, bundle_dirs, find_bundle, load_bundle
from ..runs.staging import install, staged_folder
from .core_wheel import build_core_wheel, wheel_name
from .server import WEB_DIR, bundle_index, ensure_node_modules
from .training_assets import ASSET_PATHS, asset

#: The npm files the page loads, relative to web/node_modules (nothing else is copied).
NPM_FILES = (
    "pyodide/pyodide.mjs",
    "pyodide/pyodide.asm.mjs",
    "pyodide/pyodide.asm.wasm",
    "pyodide/python_stdlib.zip",
    "pyodide/pyodide-lock.json",
    "onnxruntime-web/dist/ort.webgpu.min.mjs",
    "onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs",
    "onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm",
    # the Train mode: TensorFlow.js with its wasm (plain, SIMD, threaded SIMD) and WebGPU backends, protobufjs
    "@tensorflow/tfjs/dist/tf.min.js",
    "@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm",
    "@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js",
    "protobufjs/dist/protobuf.min.js",
)
#: What a MuJoCo bundle adds: MuJoCo's wasm build, one file with the wasm inside.
MUJOCO_NPM_FILES = ("mujoco-js/dist/mujoco_wasm.js",)
#: The page's own files, relative to web/: its HTML, its style and every module under src/.
PAGE_FILES = ("index.html", "styles.css", *sorted(str(p.relative_to(WEB_DIR)) for p in (WEB_DIR / "src").rglob("*.js")))
#: Marks a folder this command wrote, so rebuilding may replace it and nothing else is ever deleted.
MARKER = ".thrust-site"


def resolve_bundles(names: Sequence[str], export_dir: Path | None = None) -> list[Path]:
    """Bundle folders from paths, or names in the export folder or the reference bundles (every valid bundle
    there when none are named)."""
    dirs = bundle_dirs(export_dir)
    if not names:
        folders = [find_bundle(entry["name"], dirs) for entry in bundle_index(*dirs) if entry["ok"]]
        if not folders:
            raise BundleError(f"no bundles in {dirs[0]}; name bundle folders to put on the site")
        return folders
    folders = []
    for name in names:
        folder = Path(name) if Path(name).exists() else find_bundle(name, dirs)
        load_bundle(folder)  # a broken or missing bundle stops the build, with its reason
        folders.append(folder)
    if len({folder.resolve().name for folder in folders}) < len(folders):
        raise BundleError("two bundles share a folder name; the site keys bundles by name, so rename one")
    return folders


def build_site(
    out: str | Path, bundles: Sequence[str] = (), web_dir: Path = WEB_DIR, log: Callable[[str], None] = print
) -> dict:
    """Write the static site to `out`; returns {"path", "bytes", "bundles"}."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BundleError(f"{out} is a file; give `thrust web build` a folder to write the site to")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BundleError(f"{out} exists and is not a site `thrust web build` made; choose an empty or new folder")
    folders = resolve_bundles(bundles)
    ensure_node_modules(web_dir, log)
    with staged_folder(out) as staging:
        for name in PAGE_FILES:
            _copy(web_dir / name, staging / name)
        robots = {task.xml_file for folder in folders if (task := playing_locomotion(load_bundle(folder).manifest))}
        for name in NPM_FILES + (MUJOCO_NPM_FILES if robots else ()):
            _copy(web_dir / "node_modules" / name, staging / "node_modules" / name)
        for xml_file in sorted(robots):
            _copy(gymnasium_xml(xml_file), staging / "py" / "mujoco" / xml_file)
        (staging / "py").mkdir(exist_ok=True)
        (staging / "py" / wheel_name()).write_bytes(build_core_wheel())
        (staging / "py" / "index.json").write_text(json.dumps({"wheel": wheel_name()}))
        for path in ASSET_PATHS:  # the Train mode's presets and export templates
            (staging / "py" / path).parent.mkdir(parents=True, exist_ok=True)
            (staging / "py" / path).write_bytes(asset(path))
        for folder in folders:
            for file in ("policy.onnx", "manifest.json"):
                _copy(folder / file, staging / "export" / folder.resolve().name / file)
        (staging / "export" / "index.json").write_text(json.dumps(bundle_index(staging / "export"), indent=1))
        (staging / MARKER).write_text("built by `thrust web build`; rebuilding replaces this folder\n")
        (staging / ".nojekyll").write_text("")  # GitHub Pages' Jekyll would otherwise drop node_modules/
        install(staging, out)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    return {"path": out, "bytes": size, "bundles": [folder.resolve().name for folder in folders]}


def _copy(source: Path, target: Path) -> None:
    if not source.is_file():
        raise BundleError(f"{source} is missing; run `npm ci` in web/ (or `make web`) and build again")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def embed_snippet(url: str, bundle: str) -> str:
    """The <iframe> that plays one bundle of a site published at `url`."""
    return f'<iframe src="{url.rstrip("/")}/?bundle={bundle}&embed=1" width="640" height="480" style="border:0"></iframe>'
