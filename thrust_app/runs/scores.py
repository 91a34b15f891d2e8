"""The ways a comparison scores a run (`thrust compare --score`), in a module of their own so that the command
line can offer them without importing the statistics (scipy) behind the comparison."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Score:
    """One way to score a run: `key` in RunScore.scores, what the table calls it, which way is better."""

    key: str
    label: str
    higher_is_better: bool


#: The scores a comparison can rank by. A run that never reached the threshold counts at its whole length
#: (steps or seconds), flagged; early-stopped runs are scored fairly by "steps" / "seconds" / "auc".
SCORES = {
    "final": Score("final", "final evaluation", True),
    "steps": Score("steps", "env steps to the threshold", False),
    "seconds": Score("seconds", "seconds to the threshold", False),
    "auc": Score("auc", "area under the evaluation curve (mean evaluation over the run)", True),
}


__all__ = ["SCORES", "Score"]
