"""Interval estimates over seeds: the interquartile mean and its bootstrap confidence interval.

With a handful of seeds the mean is pulled about by one lucky or unlucky run and the median
throws most runs away. The interquartile mean (IQM: the mean of the middle half of the
scores) is between the two, and a confidence interval says how far it could move with other
seeds. Both come from rliable (Agarwal et al., 2021, "Deep Reinforcement Learning at the
Edge of the Statistical Precipice", arxiv.org/abs/2108.13264), the field's library for
this: its `aggregate_iqm`, and a stratified bootstrap over the runs (with one task, as here,
stratifying changes nothing: it is a bootstrap over the seeds).

    interval = iqm_interval(runs.score("final"))   # {seed: score}
    print(interval)   # IQM 212 (95% CI 180 to 240) over seeds 0, 1, 2, 3, 4
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from wd_teach.errors import MissingPieceError, TrainError


@dataclass(frozen=True)
class Interval:
    """An IQM over named seeds and its confidence interval [low, high]."""

    iqm: float
    low: float
    high: float
    seeds: tuple[int, ...]
    confidence: float = 0.95

    def __str__(self) -> str:
        return (f"IQM {self.iqm:.3g} ({100 * self.confidence:g}% CI {self.low:.3g} to "
                f"{self.high:.3g}) over seeds {', '.join(map(str, self.seeds))}")

    def verdict(self, above: str, below: str, apart: str = "the two") -> str:
        """What the interval of a difference supports, and no more: `above` where all of it
        is above 0, `below` where all of it is below, else that these seeds cannot tell
        `apart` apart."""
        if self.low > 0:
            return above
        if self.high < 0:
            return below
        return f"the interval holds 0: these seeds cannot tell {apart} apart"


def iqm(scores) -> float:
    """The interquartile mean: a quarter of the scores cut from each end, the rest averaged
    (rliable's aggregate_iqm; with fewer than 4 scores nothing is cut)."""
    from rliable import metrics

    return float(metrics.aggregate_iqm(np.asarray(scores, dtype=float)))


def rliable_library():
    """rliable.library, which imports arch for its bootstrap; a clear error where that
    fails. arch 7 (rliable 1.2 asks for arch below 8) does not import under pandas 3, and
    then says only `deprecate_kwarg() missing 1 required positional argument`."""
    try:
        from rliable import library
    except Exception as err:  # ImportError, or arch's TypeError under pandas 3
        from wd_teach.device import _version

        found = ", ".join(f"{n} {_version(n) or 'not installed'}"
                          for n in ("rliable", "arch", "pandas"))
        raise MissingPieceError(
            f"the interval estimates need rliable, which could not be imported "
            f"({type(err).__name__}: {err}; here: {found}). wd-teach asks for rliable 1.2, "
            f"whose arch needs pandas below 3: pip install 'rliable>=1.2,<1.3' 'pandas<3' "
            f"(pip install -e . does it).") from err
    return library


def iqm_interval(scores: Mapping[int, float], *, confidence: float = 0.95, reps: int = 2000,
                 random_seed: int = 0) -> Interval:
    """The IQM of `scores` ({seed: score}, at least two seeds) and its `confidence`
    interval from `reps` bootstrap resamples of the seeds (percentile method). The resampling
    is seeded, so the same scores always give the same interval."""
    seeds, values = _checked(scores, confidence, reps)
    library = rliable_library()

    # rliable 1.2's StratifiedBootstrap draws its resamples from NumPy's global generator,
    # not from the random_state it is handed: that one is seeded for this call and put back.
    saved = np.random.get_state()
    np.random.seed(random_seed)
    try:
        with warnings.catch_warnings():
            # ... and arch 7 calls handing it a random_state deprecated (it is unused).
            warnings.filterwarnings("ignore", "random_state is deprecated", FutureWarning)
            points, intervals = library.get_interval_estimates(
                {"run": values[:, None]}, lambda s: np.array([iqm(s)]), reps=reps,
                confidence_interval_size=confidence,
                random_state=np.random.RandomState(random_seed))
    finally:
        np.random.set_state(saved)
    low, high = intervals["run"][:, 0]
    return Interval(float(points["run"][0]), float(low), float(high), seeds, confidence)


def iqm_curve(curves: np.ndarray, *, confidence: float = 0.95, reps: int = 1000,
              random_seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(IQM, low, high) over the seeds at every iteration of `curves` [seeds, iterations]:
    a learning curve with its band. An iteration where a seed has no value (NaN) is NaN."""
    curves = np.asarray(curves, dtype=float)
    out = np.full((3, curves.shape[1]), np.nan)
    for i, column in enumerate(curves.T):
        if np.isfinite(column).all():
            found = iqm_interval(dict(enumerate(column)), confidence=confidence, reps=reps,
                                 random_seed=random_seed)
            out[:, i] = found.iqm, found.low, found.high
    return out[0], out[1], out[2]


def _checked(scores, confidence, reps) -> tuple[tuple[int, ...], np.ndarray]:
    """(seeds, scores as an array), or a TrainError saying what to pass."""
    if not isinstance(scores, Mapping):
        raise TrainError("scores must be a mapping {seed: score}, so that every score names "
                         f"its seed (SeedRuns.score() gives one), got {type(scores).__name__}.")
    if len(scores) < 2:
        raise TrainError(f"an interval needs at least two seeds, got {len(scores)}: one run "
                         "says nothing about another seed. Train more seeds.")
    values = np.asarray(list(scores.values()), dtype=float)
    if not np.isfinite(values).all():
        bad = [seed for seed, v in scores.items() if not np.isfinite(v)]
        raise TrainError(f"seeds {bad} have no finite score (NaN: no episode ended in the "
                         "iterations scored?). Train longer, or score over more iterations.")
    if not 0 < confidence < 1:
        raise TrainError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}.")
    if not (isinstance(reps, int) and reps >= 100):
        raise TrainError(f"reps must be a whole number of at least 100 resamples, got {reps!r}.")
    return tuple(scores), values
