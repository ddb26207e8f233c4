"""What a checker returns: a verdict that is true only when everything it checks ran here and
was right.

A two-language exercise has a half that this machine may not be able to run: CUDA C runs only
through PyCUDA, on an NVIDIA GPU. A bare True there would let `assert check(...)` pass on a
kernel nobody ran. So a checker returns a Verdict: truthy only when every part ran and was
right. Where a part could not run, `passed_here` says whether everything that did run was
right, which is what a notebook's solution cell can assert on a CPU. Its repr is the verdict
in words, so an exercise cell ends on that, never on a bare False.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """The parts of an exercise (by label) that ran and were right, that were found wrong,
    and that were not run here, each with the reason."""

    right: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()
    not_run: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.right) and not self.wrong and not self.not_run

    @property
    def passed_here(self) -> bool:
        """Nothing was found wrong in what this machine could check, and something was
        checked. Some parts may not have run here (CUDA C without PyCUDA, a type check
        without Numba's GPU compiler): then the verdict itself stays false."""
        return not self.wrong and bool(self.right or self.not_run)

    def __repr__(self) -> str:
        if self.wrong:
            return f"Verdict: not yet (wrong: {', '.join(self.wrong)}; see above)"
        if not self.not_run:
            return f"Verdict: all right ({', '.join(self.right)})"
        unrun = ", ".join(label for label, _ in self.not_run)
        ran = (f"right where it ran ({', '.join(self.right)})" if self.right
               else "no part was checked whole")  # a part may have run, checked in part
        return (f"Verdict: checked only in part: {ran}; NOT run or not checked whole here: "
                f"{unrun}. False as a whole; .passed_here is {self.passed_here}")


def not_yet(label: str = "answer") -> Verdict:
    """The verdict on an answer that is missing or wrong (the checker printed why)."""
    return Verdict(wrong=(label,))


def verdict_of(label: str) -> Callable:
    """Turn a one-part checker that returns True or False (and prints why) into one that
    returns a Verdict on `label`: every part it checks runs on any machine."""

    def wrap(check: Callable[..., bool]) -> Callable[..., Verdict]:
        @functools.wraps(check)
        def checked(*args, **kwargs) -> Verdict:
            return Verdict(right=(label,)) if check(*args, **kwargs) else not_yet(label)

        checked.__annotations__ = {**check.__annotations__, "return": Verdict}
        return checked

    return wrap
