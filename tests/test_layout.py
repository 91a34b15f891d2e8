"""The package's shape, as a newcomer relies on it: a handful of entry points at the top, folders that
import only from the layers below them (so the algorithms never import the speed layer), no import
circle anywhere, functions and classes short enough to read on one screen, and README's map of the
folders true to the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "thrust_app"

#: Each folder (or top-level module) of thrust_app and its layer: a module may import its own layer's
#: folder and any lower layer, never a higher one.
LAYERS = {
    "version": 0,
    "config": 0,
    "runs": 0,
    "envs": 1,
    "nets": 2,
    "algos": 3,
    "speed": 4,
    "training": 5,
    "sweeps": 6,
    "interop": 6,
    "web": 7,
    "api": 8,
    "dashboard": 9,
    "cli": 10,
    "__main__": 10,
    "": 11,  # thrust_app/__init__.py: the version, registering the envs, the model classes of `api` on first use
}
MAX_TOP_LEVEL_MODULES = 6
MAX_FUNCTION_LINES = 50
MAX_CLASS_LINES = 160


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imported_modules(name: str) -> set[str]:
    """Every thrust_app module `name` imports anywhere in its file (functions and TYPE_CHECKING blocks too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # `from pkg import module` imports the module, else the package
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imported_modules(name) for name in MODULES}


def layer_of(module: str) -> int:
    return LAYERS[module.split(".")[1] if "." in module else ""]


def test_every_folder_has_a_layer():
    assert {layer_of(name) for name in MODULES} <= set(LAYERS.values())


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_below(name):
    upward = sorted(module for module in GRAPH[name] if layer_of(module) > layer_of(name))
    assert not upward, f"{name} imports {upward}, which sit above it (see LAYERS)"


def test_the_algorithms_import_no_speed_module():
    speed = {name: sorted(m for m in GRAPH[name] if m.startswith("thrust_app.speed")) for name in MODULES}
    assert not {name: found for name, found in speed.items() if name.startswith("thrust_app.algos") and found}


def test_no_import_circle():
    """Tarjan's strongly connected components of the import graph: every one is a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for neighbour in GRAPH[node]:
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert not circles


def test_the_top_level_holds_a_handful_of_entry_points():
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


def long_definitions() -> list[str]:
    found = []
    for name, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.end_lineno - node.lineno + 1 > limit:
                found.append(f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    return found


def test_functions_and_classes_fit_on_a_screen():
    assert not long_definitions(), f"over {MAX_FUNCTION_LINES} lines (function) or {MAX_CLASS_LINES} (class)"


def readme_map() -> dict[str, str]:
    """README's "Where things live" table: path -> what it says is there."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| (.+) \|$", section, flags=re.M))


def test_readme_maps_every_folder_and_top_level_module():
    mapped = readme_map()
    assert mapped, "README.md has no 'Where things live' table"
    for path in mapped:
        assert (ROOT / path).exists(), f"README.md maps {path}, which does not exist"
    folders = sorted(f"thrust_app/{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    modules = sorted(f"thrust_app/{p.name}" for p in PACKAGE.glob("*.py"))
    missing = [path for path in folders + modules if path not in mapped]
    assert not missing, f"README.md's 'Where things live' does not name {missing}"


def test_every_module_is_named_in_its_folders_row():
    """Each folder's row names each of its modules, so a reader finds a file from README."""
    mapped = readme_map()
    for folder, text in mapped.items():
        if not folder.startswith("thrust_app/") or not folder.endswith("/"):
            continue
        unnamed = sorted(p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py" and p.stem not in text)
        assert not unnamed, f"README.md's row for {folder} does not name {unnamed}"


def test_readme_links_nothing_outside_the_repository():
    targets = re.findall(r"\]\(([^)#]+)", (ROOT / "README.md").read_text())
    outside = [t for t in targets if not t.startswith("http") and not (ROOT / t).resolve().is_relative_to(ROOT)]
    assert not outside
    assert "../shared" not in (ROOT / "README.md").read_text()


#: Modules without a test file of their own, and the test file that covers them (it names the module).
COVERED_BY = {
    "api/model_file.py": "tests/api/test_model.py",
    "api/model_card.py": "tests/api/test_share.py",
    "runs/curves.py": "tests/api/test_model.py",
    "runs/compare_plot.py": "tests/runs/test_compare.py",
    "runs/scores.py": "tests/runs/test_compare.py",
    "version.py": "tests/api/test_model.py",
    "algos/action_noise.py": "tests/algos/test_td3.py",
    "nets/obs_normalizer.py": "tests/training/test_normalization.py",
    "algos/base.py": "tests/training/test_trainer.py",
    "dashboard/jobs.py": "tests/dashboard/test_app.py",
    "dashboard/widgets.py": "tests/dashboard/test_app.py",
    "dashboard/new_run_tab.py": "tests/dashboard/test_app.py",
    "dashboard/training_tab.py": "tests/dashboard/test_app.py",
    "dashboard/runs_tab.py": "tests/dashboard/test_app.py",
    "dashboard/compare_tab.py": "tests/dashboard/test_app.py",
    "dashboard/export_tab.py": "tests/dashboard/test_app.py",
    "dashboard/watch_tab.py": "tests/dashboard/test_watch.py",
    "interop/video.py": "tests/dashboard/test_watch.py",
    "dashboard/sweeps_tab.py": "tests/dashboard/test_sweeps.py",
    "envs/arrays.py": "tests/envs/test_batched.py",
    "envs/core/bandit.py": "tests/envs/test_core.py",
    "envs/core/base.py": "tests/envs/test_core.py",
    "envs/core/cards.py": "tests/envs/test_core.py",
    "envs/core/cartpole.py": "tests/envs/test_core.py",
    "envs/core/hidden_velocity.py": "tests/envs/test_core.py",
    "envs/core/mountain_car.py": "tests/envs/test_gym_adapter.py",
    "envs/core/acrobot.py": "tests/envs/test_gym_adapter.py",
    "envs/core/minatar.py": "tests/envs/test_minatar_cores.py",
    "envs/core/locomotion.py": "tests/envs/test_locomotion.py",
    "envs/mujoco_physics.py": "tests/envs/test_locomotion.py",
    "envs/core/pendulum.py": "tests/envs/test_core.py",
    "envs/core/pcg64.py": "tests/envs/test_core.py",
    "envs/core/snake.py": "tests/envs/test_core.py",
    "envs/core/vector.py": "tests/envs/test_vector_core.py",
    "envs/demo.py": "tests/envs/test_core.py",
    "envs/render.py": "tests/envs/test_gym_adapter.py",
    "envs/tensors.py": "tests/algos/test_rollout.py",
    "envs/vec.py": "tests/envs/test_gym_adapter.py",
    "interop/bundle.py": "tests/interop/test_exporter.py",
    "interop/manifest.py": "tests/web/test_player.py",
    "interop/onnx_actions.py": "tests/interop/test_importer.py",
    "interop/safe_pickle.py": "tests/interop/test_importer.py",
    "speed/numba_nets.py": "tests/speed/test_numba_kernels.py",
    "speed/numba_sac.py": "tests/speed/test_sac_backward.py",
    "speed/numpy_exploration.py": "tests/speed/test_numpy_acting.py",
    "speed/numpy_rollout.py": "tests/speed/test_numpy_acting.py",
    "sweeps/launch.py": "tests/sweeps/test_optuna_engine.py",
    "sweeps/ray_loopback.py": "tests/sweeps/test_ray_engine.py",
    "sweeps/trial_runs.py": "tests/sweeps/test_optuna_engine.py",
    "sweeps/trials.py": "tests/sweeps/test_optuna_engine.py",
    "training/checkpointer.py": "tests/test_faults.py",
    "training/evaluation.py": "tests/training/test_trainer.py",
    "training/run_spec.py": "tests/test_config.py",
    "web/browser.py": "tests/web/test_player.py",
    "web/core_wheel.py": "tests/web/test_player.py",
    "web/training_assets.py": "tests/web/test_train.py",
}


def own_test_file(relative: str) -> Path:
    """tests/FOLDER/test_NAME.py for thrust_app/FOLDER/NAME.py (top-level modules: tests/test_NAME.py)."""
    path = Path(relative)
    return ROOT / "tests" / path.parent / f"test_{path.stem}.py"


def test_every_module_has_a_test_file_or_a_named_one_that_covers_it():
    modules = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    untested = [m for m in modules if not own_test_file(m).exists() and m not in COVERED_BY]
    assert not untested, f"give these a test file, or name the one that covers them in COVERED_BY: {untested}"
    for module, test_file in COVERED_BY.items():
        assert not own_test_file(module).exists(), f"{module} has its own test file now: drop it from COVERED_BY"
        text = (ROOT / test_file).read_text()
        # the covering file imports the module or its folder, or names the module
        dotted = "thrust_app." + module.removesuffix(".py").replace("/", ".")
        folder = dotted.rpartition(".")[0]
        assert dotted in text or Path(module).stem in text or f"from {folder}" in text, (module, test_file)


def test_the_page_keeps_its_mutable_state_in_state_objects():
    """No module-level `let`/`var` in web/src: each module's changing state is one `const` object."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "web" / "src").rglob("*.js"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"(let|var)\s", line)
    ]
    assert not found
