"""benches/parity.py's written table: a run of some rows (`--only`, or on a machine whose .bench/ has no earlier
results) replaces those rows and keeps every other row as written, with the date each was run on."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def parity(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benches"))
    import parity

    yield parity
    sys.modules.pop("parity", None)


def results(algo: str, env: str, thrust: list[float], sb3: list[float]) -> list[dict]:
    """One row's results as parity.py's runs record them (final evaluations per seed, one evaluation on the way)."""
    return [
        {"algo": algo, "env": env, "lib": lib, "seed": seed, "label": "preset", "thrust_set": [], "preset": "default",
         "steps": 20_000, "wall_s": 1.0, "evals": [(2_000, final)], "final_mean": final, "final_success": None, "gaps": []}
        for lib, finals in (("thrust", thrust), ("sb3", sb3))
        for seed, final in enumerate(finals)
    ]  # fmt: skip


def write(parity, out: Path, readme: Path, results: list[dict], when: str) -> None:
    """What parity.py's main does with its results."""
    rows = [row for algo, env, target, _ in parity.ROWS if (row := parity.summarize(results, algo, env, target, "preset"))]
    kept = parity.kept_rows(out, {parity.row_name(r["algo"], r["env"], r["label"], r["preset"]) for r in rows})
    parity.replace_block(out, "parity", parity.markdown(rows, kept, when))
    parity.replace_block(readme, "parity", parity.readme_rows(rows, kept, readme))


def table(out: Path) -> dict[str, str]:
    """The parity table's rows by their first two cells (" algo | env ")."""
    text = out.read_text()
    block = text[text.index("<!-- parity:start -->") : text.index("<!-- parity:end -->")]
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| algo |")]
    return {"|".join(line.split("|")[1:3]): line for line in rows}


def test_a_run_of_one_row_keeps_the_tables_other_rows_and_their_dates(parity, tmp_path):
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    shutil.copy(ROOT / "docs" / "validation.md", out)
    shutil.copy(ROOT / "README.md", readme)
    before = table(out)  # the committed rows, undated
    mcc = results("ppo", "mountaincar-continuous", [91.0, 93.0, 95.0, 92.0, 94.0], [50.0, 60.0, 70.0, 80.0, 85.0])
    write(parity, out, readme, mcc, "2031-01-02")
    rows = table(out)
    assert rows[" ppo | mountaincar-continuous "].endswith("| yes | 2031-01-02 |")
    for name, line in before.items():  # every earlier row kept, its date taken from the text that produced it
        assert rows[name].startswith(line.rstrip()) and rows[name] != line
    # a second run of another row keeps the first run's row with its own date
    cartpole = results("ppo", "cartpole", [500.0] * 5, [500.0] * 5)
    write(parity, out, readme, cartpole, "2031-02-03")
    rows = table(out)
    assert rows[" ppo | mountaincar-continuous "].endswith("| yes | 2031-01-02 |")
    assert rows[" ppo | cartpole "].endswith("| yes | 2031-02-03 |")
    assert len(rows) == len(before) + 1
    at_parity = sum(line.split("|")[9].strip() == "yes" for line in rows.values())
    readme_rows = [line for line in readme.read_text().splitlines() if line.startswith("| Parity with SB3")]
    count = f"{at_parity} of {len(rows)} presets at parity"
    assert readme_rows == [f"| Parity with SB3 (benches/parity.py) | {count} (docs/validation.md) |"]
    assert any(line.startswith("| DQN CartPole") for line in readme.read_text().splitlines())  # kept: no DQN row ran
