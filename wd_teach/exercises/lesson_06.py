"""Checker for 06_tag: the catch rule of Tag, vectorised in NumPy.

The learner writes `caught(loc_x, loc_y, in_game, num_taggers, tagging_distance)`: which
runners a tagger catches this step, as a bool array [envs, runners], for all environments at
once. The checker asks the Tag games' own NumPy reference (tag_catch's twin in
envs/_tag/tag_reference.py) on copies of the same states, and tries the cases that trip
people: runners already out of the game, a runner exactly at the tagging distance, several
taggers, environments that differ.
"""

from __future__ import annotations

import numpy as np

from wd_teach_envs._tag import tag_reference


def reference_caught(loc_x, loc_y, in_game, num_taggers, tagging_distance) -> np.ndarray:
    """What the reference catch does to copies of the state: the runners that leave."""
    in_game_after = in_game.copy()
    rewards = np.zeros(loc_x.shape, np.float32)
    runners_left = np.zeros(loc_x.shape[0], np.int32)
    tag_reference.catch(loc_x, loc_y, in_game_after, rewards, runners_left, num_taggers,
                        np.float32(tagging_distance), np.float32(1), np.float32(-1), 1)
    return (in_game[:, num_taggers:] != 0) & (in_game_after[:, num_taggers:] == 0)


def cases(rng: np.random.Generator):
    """(what the case tries, loc_x, loc_y, in_game, num_taggers, tagging_distance)."""
    shape = (4, 12)
    x = rng.uniform(0, 5, shape).astype(np.float32)
    y = rng.uniform(0, 5, shape).astype(np.float32)
    playing = np.ones(shape, np.int32)
    yield "random positions, everyone playing", x, y, playing, 3, 1.0
    out = playing.copy()
    out[:, 3::2] = 0
    yield "some runners already out of the game", x, y, out, 3, 1.0
    grid_x = rng.integers(0, 4, shape).astype(np.float32)
    grid_y = rng.integers(0, 4, shape).astype(np.float32)
    yield ("whole-number positions: many runners exactly at the tagging distance", grid_x,
           grid_y, playing, 2, 1.0)
    yield "one tagger, a long reach", x, y, playing, 1, 2.5


def check_caught(caught) -> bool:
    """Check the learner's `caught` function against the reference on every case."""
    if caught is None or not callable(caught):
        print("Not yet: write caught(loc_x, loc_y, in_game, num_taggers, tagging_distance) "
              "and pass the function.")
        return False
    rng = np.random.default_rng(6)
    for what, x, y, in_game, num_taggers, distance in cases(rng):
        want = reference_caught(x, y, in_game, num_taggers, distance)
        try:
            got = caught(x.copy(), y.copy(), in_game.copy(), num_taggers, distance)
        except Exception as err:  # the learner's code may fail in any way; say how
            print(f"Case '{what}': caught() raised {type(err).__name__}: {err}")
            return False
        if got is None:
            print("Not yet: caught() returns None; return a bool array [envs, runners].")
            return False
        got = np.asarray(got)
        if got.shape != want.shape:
            print(f"Case '{what}': caught() returned shape {got.shape}, want {want.shape}: "
                  f"one value per environment and runner (agents {num_taggers} and up are "
                  "the runners).")
            return False
        if np.array_equal(got.astype(bool), want):
            continue
        env, runner = (int(i) for i in np.argwhere(got.astype(bool) != want)[0])
        print(f"Case '{what}': env {env}, runner {runner} (agent {num_taggers + runner}): "
              f"got {bool(got[env, runner])}, want {bool(want[env, runner])}.")
        print(f"Hint: {_hint(what, bool(want[env, runner]))}")
        return False
    print("All right: the same runners are caught as in the Tag games' own reference.")
    return True


def _hint(what: str, want: bool) -> str:
    if "out of the game" in what and not want:
        return "a runner already out of the game (in_game == 0) cannot be caught again."
    if "exactly" in what and want:
        return ("within the tagging distance includes exactly at it: dx*dx + dy*dy <= "
                "tagging_distance**2.")
    return ("a runner is caught when any tagger (agents 0 .. num_taggers - 1) is within "
            "tagging_distance: compare dx*dx + dy*dy with tagging_distance**2 for every "
            "(runner, tagger) pair, with arrays shaped [env, runner, tagger].")
