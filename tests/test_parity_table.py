"""benches/parity.py's written table: a run of some rows (`--only`, or on a machine whose .bench/ has no earlier
results) replaces those rows and keeps every other row as written, with the date each was run on."""

from __future__ import annotations

import subprocess
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
    rows, _ = parity.all_rows(results)
    kept = parity.kept_rows(out, {parity.name_of(r) for r in rows})
    parity.replace_block(out, "parity", parity.markdown(rows, kept, when))
    parity.replace_block(readme, "parity", parity.readme_rows(rows, kept, readme))


def table(out: Path) -> dict[str, str]:
    """The parity table's rows by their first two cells (" algo | env ")."""
    text = out.read_text()
    block = text[text.index("<!-- parity:start -->") : text.index("<!-- parity:end -->")]
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| algo |")]
    return {"|".join(line.split("|")[1:3]): line for line in rows}


#: A table as parity.py wrote it before its `run on` column: two rows, one with a note under the table.
UNDATED = """# Validation

<!-- parity:start -->
## Parity with Stable-Baselines3, every preset

Produced by `python benches/parity.py` (`make validate`) on 2030-05-06; host: x86_64, 2 cores.

{head}
|------|---:|---|---|---:|---:|---:|---|
| sac | pendulum | 5 | -127.7 [-134.1, -126.3] | -127.9 [-131.3, -126.9] | 0.56 | 5/5 / 5/5 | 5,000 / 5,000 | yes |
| sac | FetchReach-v4 | 5 | -1.6 [-1.8, -1.5] | -1.5 [-1.6, -1.5] | 0.20 | 5/5 / 5/5 | 12,000 / 12,000 | **no** |

Success rates of the final policies (goal envs' `is_success`):

- sac FetchReach-v4: Thrust 1.00 (per seed 1.00); SB3 1.00 (per seed 1.00)

<!-- parity:end -->
""".format(
    head="| algo | env | seeds | Thrust final IQM [95% CI] | SB3 final IQM [95% CI] | P(Thrust >= SB3) | ends at target, "
    "Thrust / SB3 | steps to target, Thrust / SB3 (median) | parity |"
)

README = """| a | b |
<!-- parity:start -->
| Parity with SB3 (benches/parity.py) | 1 of 2 presets at parity (docs/validation.md) |
| DQN CartPole, zoo preset vs SB3 on its settings | ends solved on 3/5 seeds vs 3/5 |
<!-- parity:end -->
"""


def test_a_run_of_one_row_keeps_the_tables_other_rows_and_their_dates(parity, tmp_path):
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)
    mcc = results("ppo", "mountaincar-continuous", [91.0, 93.0, 95.0, 92.0, 94.0], [50.0, 60.0, 70.0, 80.0, 85.0])
    write(parity, out, readme, mcc, "2031-01-02")
    rows = table(out)
    assert rows[" ppo | mountaincar-continuous "].endswith("| yes | 2031-01-02 |")
    # the earlier rows kept, each dated by the text that produced it, in the table's order; the note kept too
    assert rows[" sac | pendulum "].endswith("| 5,000 / 5,000 | yes | 2030-05-06 |")
    assert rows[" sac | FetchReach-v4 "].endswith("| 12,000 / 12,000 | **no** | 2030-05-06 |")
    assert list(rows) == [" sac | pendulum ", " ppo | mountaincar-continuous ", " sac | FetchReach-v4 "]
    assert "- sac FetchReach-v4: Thrust 1.00 (per seed 1.00); SB3 1.00 (per seed 1.00)" in out.read_text()
    # a second run of another row keeps the first run's row with its own date
    write(parity, out, readme, results("sac", "pendulum", [-120.0] * 5, [-130.0] * 5), "2031-02-03")
    rows = table(out)
    assert rows[" ppo | mountaincar-continuous "].endswith("| yes | 2031-01-02 |")
    assert rows[" sac | pendulum "].endswith("| yes | 2031-02-03 |") and len(rows) == 3
    # a row is dated by the day its latest run finished, not by the day the table is written
    dated = [
        run | {"run_on": "2031-03-0" + str(run["seed"] % 3 + 1)}
        for run in results("sac", "pendulum", [-120.0] * 5, [-130.0] * 5)
    ]
    write(parity, out, readme, dated, "2031-09-09")
    assert table(out)[" sac | pendulum "].endswith("| yes | 2031-03-03 |")
    assert table(out)[" ppo | mountaincar-continuous "].endswith("| yes | 2031-01-02 |")
    readme_rows = [line for line in readme.read_text().splitlines() if line.startswith("| ")]
    assert readme_rows == [
        "| a | b |",
        "| Parity with SB3 (benches/parity.py) | 2 of 3 presets at parity (docs/validation.md) |",
        "| DQN CartPole, zoo preset vs SB3 on its settings | ends solved on 3/5 seeds vs 3/5 |",  # kept: no DQN row ran
    ]


def test_a_row_short_of_parity_lists_its_seeds_and_a_mann_whitney_p_that_another_run_keeps(parity, tmp_path):
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)
    # Thrust behind on four of five seeds: P = 0.2, and the test cannot tell the sides apart at this spread
    close = results("ppo", "mountaincar", [-130.0, -131.0, -129.0, -128.0, -110.0], [-127.0, -126.0, -125.0, -124.0, -135.0])
    write(parity, out, readme, close, "2031-01-02")
    text = out.read_text()
    assert table(out)[" ppo | mountaincar "].endswith("| **no** | 2031-01-02 |")
    from scipy.stats import mannwhitneyu

    p = mannwhitneyu([-130.0, -131.0, -129.0, -128.0, -110.0], [-127.0, -126.0, -125.0, -124.0, -135.0]).pvalue
    line = f"- ppo mountaincar: p = {p:.2f}; Thrust -130, -131, -129, -128, -110; SB3 -127, -126, -125, -124, -135"
    assert line in text and p > 0.05
    # clearly behind on every seed: a small p
    far = results("ppo", "mountaincar", [-150.0, -151.0, -152.0, -153.0, -154.0], [-120.0, -121.0, -122.0, -123.0, -124.0])
    assert parity.summarize(far, "ppo", "mountaincar", -110.0, "preset")["mann_whitney_p"] < 0.05
    # a run of another row keeps the line (the row is kept, still short of parity); a row at parity has none
    write(parity, out, readme, results("sac", "pendulum", [-120.0] * 5, [-130.0] * 5), "2031-02-03")
    assert line in out.read_text() and "- sac pendulum: p =" not in out.read_text()
    # the lines follow the table's order, this run's or kept: sac pendulum's row (kept) stands above mountaincar's
    write(parity, out, readme, results("sac", "pendulum", [-130.0] * 5, [-120.0] * 5), "2031-03-04")
    write(parity, out, readme, close, "2031-04-05")
    text = out.read_text()
    assert text.index("- sac pendulum: p =") < text.index(line) < text.index("<!-- parity:end -->")


def test_a_row_reads_every_seed_both_sides_ran_whatever_another_rows_run_asked_for(parity, tmp_path):
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)
    # ppo mountaincar ran 7 seeds a side earlier; this run trains sac pendulum with 5: the 7-seed row stays whole
    seven = results("ppo", "mountaincar", [-130.0, -131.0, -129.0, -128.0, -110.0, -120.0, -121.0], [-125.0] * 7)
    write(parity, out, readme, seven + results("sac", "pendulum", [-130.0] * 5, [-130.0] * 5), "2031-01-02")
    assert table(out)[" ppo | mountaincar "].startswith("| ppo | mountaincar | 7 |")
    # a side that ran a seed the other did not (a run cut short): the row reads the seeds both ran
    cut = [r for r in seven if not (r["lib"] == "sb3" and r["seed"] >= 5)]
    row = parity.summarize(cut, "ppo", "mountaincar", -110.0, "preset")
    assert row["thrust"]["finals"] == [-130.0, -131.0, -129.0, -128.0, -110.0] and row["sb3"]["seeds"] == 5
    # one seed both sides ran is no row (no interval, no verdict): it waits for a second
    assert parity.summarize(seven[:2] + seven[7:9], "ppo", "mountaincar", -110.0, "preset")["thrust"]["seeds"] == 2
    assert parity.summarize(seven[:1] + seven[7:9], "ppo", "mountaincar", -110.0, "preset") is None


def test_a_row_short_of_parity_adds_the_mean_of_its_last_quarters_evaluations_when_each_run_has_three(parity):
    # PPO Hopper's shape: every run evaluated from 250k on; the last quarter (past 750k) holds four evaluations
    finals = {"thrust": [300.0, 1000.0, 990.0], "sb3": [1000.0, 1010.0, 995.0]}
    late = {"thrust": [[20.0, 900.0, 30.0, 300.0], [1000.0] * 4, [900.0] * 4], "sb3": [[1000.0] * 4, [600.0] * 4, [800.0] * 4]}
    runs = []
    for lib in ("thrust", "sb3"):
        for seed, (final, ending) in enumerate(zip(finals[lib], late[lib], strict=True)):
            evals = [(step, 500.0) for step in range(250_000, 800_000, 250_000)] + list(
                zip(range(800_000, 1_000_000, 50_000), ending, strict=True)
            )
            runs.append({"algo": "ppo", "env": "Hopper-v5", "lib": lib, "seed": seed, "label": "preset", "thrust_set": [],
                         "preset": "default", "steps": 1_000_000, "wall_s": 1.0, "evals": evals, "final_mean": final,
                         "final_success": None, "gaps": []})  # fmt: skip
    row = parity.summarize(runs, "ppo", "Hopper-v5", None, "preset")
    text = parity.spread_text(row)
    # seed 0's dips average to 312.5 (its 500s before 750k left out); P over the 9 pairs of late means: 1000 beats
    # 600 and 800, 900 beats 600 and 800, 1000 ties 1000 (a half): 4.5 / 9
    assert "the last quarter's evaluations (4+ per run), averaged: Thrust 312.5, 1000, 900; SB3 1000, 600, 800" in text
    assert row["late"]["p"] == pytest.approx(0.5) and text.endswith(", P 0.50")
    # a run with two evaluations past 750k (SAC and TD3 at 100k, evaluated every 50k): no late read, the line as before
    for run in runs:
        run["evals"] = run["evals"][:-2]
    row = parity.summarize(runs, "ppo", "Hopper-v5", None, "preset")
    assert row["late"] is None and "last quarter" not in parity.spread_text(row)


def test_the_rows_read_together_say_whether_a_row_where_sb3_leads_survives_holms_correction(parity, tmp_path):
    """Under the table, one line reads its rows as one family of tests: a row where SB3 wins every one of ten seeds
    (p = 0.0002, 0.0005 after Holm's correction for the table's three rows) differs; three seeds of five (p 0.69)
    do not; a kept row written before p values were recorded is named as lacking one."""
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)

    write(parity, out, readme, results("ppo", "cartpole", list(range(1, 11)), list(range(11, 21))), "2030-06-01")
    line = next(line for line in out.read_text().splitlines() if line.startswith("Read together"))
    assert "SB3 leads (P < 0.5) on 2 of 3 rows" in line
    assert "is 0.00 (ppo cartpole), 0.00 after Holm's correction for 3 rows: 1 row(s) differ from SB3" in line
    assert "No p is recorded for sac FetchReach-v4" in line  # the kept row's P is 0.20 and UNDATED has no p for it

    write(parity, out, readme, results("ppo", "cartpole", [1, 3, 5, 7, 9], [2, 4, 6, 8, 10]), "2030-06-01")
    line = next(line for line in out.read_text().splitlines() if line.startswith("Read together"))
    assert "is 0.69 (ppo cartpole), 1.00 after Holm's correction for 3 rows: no row differs from SB3" in line
    assert parity.holm([0.01, 0.04, 0.02], 4) == pytest.approx([0.04, 0.06, 0.08])  # 4 x 0.01, 3 x 0.02, 2 x 0.04


def test_a_preset_rows_notes_and_p_stay_its_own_when_its_envs_default_row_is_rerun(parity, tmp_path):
    """A preset row shares its env with the default row: the notes under the table name it with its preset, so a run
    of the default row alone keeps the preset row's seeds and p, and the rows read together use the preset's own p."""
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)
    default = results("dqn", "cartpole", [1, 3, 5, 7, 9], [2, 4, 6, 8, 10])  # SB3 ahead on 3 of 5: p 0.69
    annealed = [run | {"preset": "annealed"} for run in results("dqn", "cartpole", list(range(1, 11)), list(range(11, 21)))]
    write(parity, out, readme, default + annealed, "2030-06-01")
    text = out.read_text()
    assert "- dqn cartpole: p = 0.69;" in text and "- dqn cartpole, preset annealed: p = 0.00;" in text

    write(parity, out, readme, results("dqn", "cartpole", [9, 9, 9, 9, 9], [1, 1, 1, 1, 1]), "2030-07-01")  # at parity
    text = out.read_text()
    assert "- dqn cartpole: p =" not in text and "- dqn cartpole, preset annealed: p = 0.00; Thrust 1, 2, 3" in text
    assert table(out)[" dqn, preset annealed | cartpole "].endswith("| **no** | 2030-06-01 |")
    line = next(line for line in text.splitlines() if line.startswith("Read together"))
    assert "is 0.00 (dqn cartpole, preset annealed), 0.00 after Holm's correction for 4 rows: 1 row(s) differ" in line


def test_a_second_writer_of_the_results_file_is_refused_in_one_line_and_writes_nothing(parity, tmp_path):
    import harness

    results = tmp_path / "parity.json"
    harness.save_results(results, [])
    held = harness.hold_results(results)  # as a running parity.py holds it
    try:
        out = tmp_path / "validation.md"
        command = [sys.executable, str(ROOT / "benches" / "parity.py"), "--results", str(results), "--out", str(out)]
        second = subprocess.run([*command, "--only", "sac:pendulum"], capture_output=True, text=True, timeout=120)
        assert second.returncode != 0
        message = second.stderr.strip().splitlines()
        assert len(message) == 1 and "is being written by process" in message[0] and "--results" in message[0]
        assert results.read_text() == "[]" and not out.exists()
    finally:
        held.__exit__(None, None, None)
    harness.hold_results(results).__exit__(None, None, None)  # free again once the first writer is done


def test_only_names_an_envs_rows_or_one_preset_row_alone(parity):
    """`--only algo:env` runs the env's default row and its preset rows; `algo:env:preset` that row alone (the
    other row's runs may be long, or kept from another machine); no `--only`: every row but the named-only."""
    assert parity.selected_rows(["ppo:pendulum"]) == [("ppo", "pendulum", "default"), ("ppo", "pendulum", "no-sde")]
    assert parity.selected_rows(["ppo:pendulum:no-sde"]) == [("ppo", "pendulum", "no-sde")]
    assert parity.selected_rows(["ppo:pendulum:default"]) == [("ppo", "pendulum", "default")]
    assert parity.selected_rows(["td3:mountaincar-continuous:default"]) == [("td3", "mountaincar-continuous", "default")]
    assert parity.selected_rows(["ppo:pendulum:annealed"]) == []
    everything = parity.selected_rows(None)
    assert ("ppo", "pendulum", "no-sde") in everything and ("dqn", "cartpole", "annealed") in everything
    assert ("td3", "mountaincar-continuous", "default") not in everything


def test_sb3s_evaluations_during_training_play_the_episodes_thrusts_trainer_plays(parity, monkeypatch):
    """On a twin row (Thrust's CartPole, gymnasium's for SB3's training) SB3's evaluations every `eval_every` steps
    run on Thrust's env with the trainer's seeds, so the steps to target and the late read compare the episodes
    Thrust's trainer plays (a twin starts where gymnasium's env starts with a seed; the steps are Thrust's core's);
    the final evaluation stays on the env SB3 trains on, for both sides."""
    import thrust_app.training.evaluation as evaluation
    from thrust_app.training.trainer import EVAL_SEED_OFFSET

    played = []
    real = evaluation.evaluate

    def recorded(act, env, n, seed, **kwargs):
        played.append((env, seed))
        return real(act, env, n, seed, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate", recorded)
    job = parity.Job("dqn", "cartpole", "sb3", seed=3)
    thrust_env, config, _ = parity.thrust_config("dqn", "cartpole", [])
    _, steps, _, env_id = parity.run_sb3(job, thrust_env, config, 600, 300, evals := [], EVAL_SEED_OFFSET)
    assert (thrust_env, env_id) == ("thrust/CartPole-v0", "CartPole-v1") and steps >= 600 and len(evals) == 2
    assert played == [(thrust_env, 3 + EVAL_SEED_OFFSET)] * 2  # what Trainer.evaluate passes for seed 3


def test_sb3s_side_of_a_minatar_row_trains_and_acts_in_thrusts_pipeline(parity):
    """SB3 sees MinAtar's grid as Thrust's training does (channels first, float), through Thrust's CNN, and its
    deterministic policy acts on the observations Thrust's evaluation hands it."""
    from thrust_app.envs import env_spaces
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.training.evaluation import evaluate

    job = parity.Job("dqn", "MinAtar/Breakout-v1", "sb3", seed=0)
    env, config, budget = parity.thrust_config(job.algo, job.env, [])
    model, act, gaps, env_id = parity.sb3_model(job, env, config)
    thrust_obs = env_spaces(env, Pipeline.of(config))[0]
    assert model.observation_space.shape == thrust_obs.shape == (4, 10, 10)
    assert type(model.q_net.features_extractor).__name__ == "ThrustCNN" and gaps == []
    assert budget == 250_000  # validation's budget, not the preset's 5M
    result = evaluate(act, env_id, 2, seed=0, pipeline=Pipeline.of(config))
    assert len(result.returns) == 2


def test_sb3s_side_of_the_masked_row_is_maskable_ppo_and_plays_only_allowed_moves(parity):
    """The card game (a Dict observation with a Discrete part, and action masks): SB3's side is sb3-contrib's
    MaskablePPO reading the env's `action_masks()`, and its deterministic policy, handed Thrust's flat observations
    and the masks by Thrust's evaluation, plays only cards in the hand (a card outside it scores -1, so an
    untrained policy blind to the masks ends most games below 0)."""
    from thrust_app.envs.pipeline import Pipeline
    from thrust_app.training.evaluation import evaluate

    job = parity.Job("ppo", "cards", "sb3", seed=0)
    env, config, _ = parity.thrust_config(job.algo, job.env, [])
    model, act, gaps, env_id = parity.sb3_model(job, env, config)
    assert type(model).__name__ == "MaskablePPO" and gaps == []
    result = evaluate(act, env_id, 5, seed=0, pipeline=Pipeline.of(config))
    assert min(result.returns) >= 0, result.returns


def test_readme_gains_a_row_per_mujoco_env_with_each_algorithms_iqm_against_sb3s(parity, tmp_path):
    out, readme = tmp_path / "validation.md", tmp_path / "README.md"
    out.write_text(UNDATED)
    readme.write_text(README)
    ppo = results("ppo", "HalfCheetah-v5", [6000.0, 5000.0, 7000.0], [4000.0, 4500.0, 3000.0])
    write(parity, out, readme, ppo, "2031-01-02")
    # a later run of another MuJoCo row keeps PPO's, read back from the table
    td3 = results("td3", "HalfCheetah-v5", [4000.0, 4100.0, 4200.0], [5000.0, 5100.0, 5200.0])
    write(parity, out, readme, td3, "2031-01-03")
    rows = [line for line in readme.read_text().splitlines() if line.startswith("| HalfCheetah-v5")]
    assert rows == [
        "| HalfCheetah-v5, the zoo's presets vs SB3 (final IQM, Thrust vs SB3) | PPO 6000.0 vs 3833.3 (P 1.00; 1M steps, "
        "3 seeds); TD3 4100.0 vs 5100.0 (P 0.00, short of parity; 100k steps, 3 seeds) |"
    ]
    assert "| Hopper-v5" not in readme.read_text()  # no row for an env the table has none of
