"""Checkers for 06_tag: the catch rule of Tag, in NumPy, then on the GPU with an atomic.

Exercise 1: the learner writes `caught(loc_x, loc_y, in_game, num_taggers, tagging_distance)`: which
runners a tagger catches this step, as a bool array [envs, runners], for all environments at
once. The checker asks the Tag games' own NumPy reference (tag_catch's twin in
envs/_tag/tag_reference.py) on copies of the same states, and tries the cases that trip
people: runners already out of the game, a runner exactly at the tagging distance, several
taggers, environments that differ.

Exercise 2: the learner writes the catch as a kernel, in Numba and in CUDA C, that counts the
runners caught with an atomic add (below: check_catch). The checker runs it and compares
who left the game and the counts with the reference. Under the simulator a plain += cannot
lose counts (it runs a block's threads one at a time), so the checker also reads from the
Numba kernel's IR which array its atomics are applied to (atomics.py): an atomic on in_game
next to a plain += on num_caught is refused; on a GPU the crowd case shows the lost counts
themselves. CUDA C that cannot run here is read for an atomicAdd on num_caught, bound and
compiled only (cuda_c_check), and the verdict says that it was NOT run.
"""

from __future__ import annotations

import re

import numpy as np

from wd_teach import cuda_c
from wd_teach._simulator import simulator_on
from wd_teach.data import DataStore
from wd_teach.errors import WdTeachError
from wd_teach.exercises.atomics import atomic_targets
from wd_teach.exercises.cuda_c_check import (
    LABEL,
    check_halves,
    compile_only,
    kernel_body,
    launch_learner_kernel,
)
from wd_teach.exercises.host_c import HOST_C
from wd_teach.exercises.verdict import Verdict, not_yet, verdict_of
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


@verdict_of("caught()")
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


# -- the catch on the GPU, with an atomic: Numba and CUDA C ---------------------------------
#
# The learner writes `catch_runners(loc_x, loc_y, in_game, num_caught, num_agents,
# num_taggers, tagging_distance)`, one thread per agent: a runner still in the game with a
# tagger within tagging_distance leaves the game (in_game = 0) and adds 1 to its
# environment's count of runners caught, num_caught[env], with an atomic add. Positions lie
# on a grid of 1/16, so that dx*dx + dy*dy is exact in float32 whether or not the compiler
# fuses the multiply and the add (Step 3): the learner needs no tag_mul to agree bit for bit.

#: (what the case tries, environments, taggers, runners, threads per block at most).
CATCH_CASES = [
    ("random positions, everyone playing", 4, 3, 9, 1024),
    ("runners already out of the game, standing on a tagger", 4, 3, 9, 1024),
    ("whole-number positions: runners exactly at the tagging distance", 4, 2, 10, 1024),
    ("a crowd: 61 runners on 3 taggers, blocks of 24 (three per game, the last part-full)",
     3, 3, 61, 24),
]
#: The count that many threads add to: it needs an atomic add.
COUNTER = "num_caught"
CATCH_PARAMETERS = ("loc_x, loc_y, in_game, num_caught, num_agents, num_taggers, "
                    "tagging_distance")
CATCH_HINT = f"write catch_runners({CATCH_PARAMETERS}), with these parameter names."
CATCH_WHOLE = ("the same runners are caught as in the Tag games' own reference, and every "
               "catch is counted, with an atomic add, in Numba and in CUDA C.")
RACE = ("threads adding to one counter at once with a plain += read the same old value and "
        "overwrite each other's adds. Count with cuda.atomic.add(num_caught, env, 1) in Numba, "
        "atomicAdd(&num_caught[env], 1) in CUDA C.")


def check_catch(numba_kernel, cuda_c_source, backend: str | None = None) -> Verdict:
    """Check both halves of `catch_runners`, the Numba kernel and the CUDA C source, the
    notebook's `backend` first."""
    if not hasattr(numba_kernel, "py_func"):
        print("Not yet: write catch_runners as a Numba kernel (@cuda.jit).")
        return not_yet()
    if not isinstance(cuda_c_source, str) or "catch_runners" not in cuda_c_source:
        print("Not yet: write the CUDA C source of catch_runners as a string.")
        return not_yet()
    halves = {False: numba_kernel, True: cuda_c_source}  # by: is the half CUDA C?
    return check_halves(backend,
                        lambda half, label: _run_catch(halves[half.reads_cuda_c], half, label),
                        lambda: _check_unrun_catch(cuda_c_source), CATCH_WHOLE,
                        on_the_cpu=True)


def _run_catch(kernel, backend: str, label: str) -> bool | str:
    if not _run_catch_cases(kernel, backend, label):
        return False
    if not backend.reads_cuda_c:
        counted = _counted_with_an_atomic(kernel, label)
        if counted is not True:
            return counted
    where = ("on the CPU, one thread at a time" if backend == HOST_C else
             "under the simulator" if simulator_on() and not backend.reads_cuda_c else
             "on the GPU")
    print(f"{label}: ran on {backend} ({where}), a crowd over three blocks included: right.")
    return True


def _counted_with_an_atomic(kernel, label: str) -> bool | str:
    """Whether the Numba kernel adds to num_caught with an atomic, read from its IR (see
    atomics.py): the simulator cannot show a lost add, and on a GPU a run may by chance lose
    none. True, False (printed why) or, where the IR cannot be read on the simulator, why
    that was not checked."""
    targets = atomic_targets(kernel.py_func)
    if targets is None:
        if not simulator_on():
            return True  # the crowd case on the GPU has shown the adds
        print(f"{label}: NOT checked that num_caught is counted with an atomic (Numba could "
              "not read the kernel's code), and the simulator cannot show a lost add.")
        return "whether num_caught is counted with an atomic was not checked"
    if "add" in targets.get(COUNTER, set()):
        return True
    elsewhere = "; ".join(f"{', '.join(sorted(ops))} on {name}" for name, ops in targets.items())
    found = (f"its atomics go elsewhere ({elsewhere})" if targets
             else "it has no atomic operation at all")
    seen = ("the simulator runs a block's threads one at a time, so a plain += cannot go wrong "
            "there" if simulator_on() else "this run happened to lose none")
    print(f"{label}: the right runners are caught and counted here, but num_caught is not "
          f"added to with an atomic: {found}. {seen.capitalize()}; on a GPU it loses adds: "
          f"{RACE}")
    return False


def _check_unrun_catch(source: str) -> bool:
    """Where PyCUDA cannot run: a body that adds to num_caught with an atomic (the race
    cannot be seen without a GPU, so the code is read for one), bound to the store,
    compiled."""
    try:
        text = cuda_c.read_source(source)
        written = ("catch_runners" in cuda_c.kernel_signatures(text)
                   and kernel_body(text, "catch_runners"))
    except WdTeachError as err:
        print(f"{LABEL}: {err}")
        return False
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    if written and not re.search(rf"\batomicAdd\s*\(\s*&?\s*{COUNTER}\b", code):
        print(f"{LABEL}: read from its code: no atomicAdd on {COUNTER} in catch_runners. "
              f"{RACE}")
        return False
    store, _ = _catch_store(np.random.default_rng(), CATCH_CASES[0])
    return compile_only(text, store, CATCH_HINT, name="catch_runners")


def _catch_store(rng, case):
    """A store for one case, and the state before the catch (x, y, in_game, num_caught)."""
    what, num_envs, taggers, runners, _ = case
    shape = (num_envs, taggers + runners)
    steps = 1 if "whole-number" in what else 16  # positions on a grid of 1/steps
    x = (rng.integers(0, 5 * steps, shape) / steps).astype(np.float32)
    y = (rng.integers(0, 5 * steps, shape) / steps).astype(np.float32)
    in_game = np.ones(shape, np.int32)
    if "already out" in what:
        out = np.arange(taggers, taggers + runners, 2)
        in_game[:, out] = 0
        x[:, out], y[:, out] = x[:, :1], y[:, :1]  # on tagger 0: out, so not caught again
    if "exactly" in what:  # at least one runner exactly 1 from tagger 0, the others far
        x[:, taggers], y[:, taggers] = x[:, 0] + 1, y[:, 0]
        x[:, 1:taggers], y[:, 1:taggers] = x[:, :1] - 3, y[:, :1]
    if "crowd" in what:
        x[:, taggers:] = x[:, :1] + (rng.integers(-8, 9, (num_envs, runners)) / 16)
        y[:, taggers:] = y[:, :1]
    store = DataStore(num_envs, taggers + runners)
    for name, values in (("loc_x", x), ("loc_y", y), ("in_game", in_game)):
        store.push(name, values, per="agent")
    store.push("num_caught", rng.integers(2, 8, num_envs).astype(np.int32), per="env")
    store.set_constant("num_taggers", taggers)
    store.set_constant("tagging_distance", 1.0)
    return store, (x, y, in_game, store.pull("num_caught"))


def _run_catch_cases(kernel, backend: str, label: str) -> bool:
    rng = np.random.default_rng()
    for case in CATCH_CASES:
        what, max_threads = case[0], case[-1]
        store, (x, y, in_game, caught_before) = _catch_store(rng, case)
        taggers = int(store.constant("num_taggers"))
        if launch_learner_kernel(store, backend, kernel, f"{label}, {what}", CATCH_HINT,
                                 max_threads=max_threads, names=("catch_runners",)) is None:
            return False
        want = reference_caught(x, y, in_game, taggers, 1.0)
        message = _wrong_catch(x, y, in_game, caught_before, want, taggers,
                               store.pull("in_game"), store.pull("num_caught"))
        if message:
            print(f"{label}, {what}: {message}")
            return False
    return True


def _wrong_catch(x, y, in_game, caught_before, want, taggers, in_game_after, num_caught):
    """What is wrong first: who left the game, then the counts; None when nothing is."""
    want_in_game = in_game.copy()
    want_in_game[:, taggers:][want] = 0
    wrong = np.argwhere(in_game_after != want_in_game)
    if wrong.size:
        env, agent = (int(i) for i in wrong[0])
        if agent < taggers:
            return (f"env {env}, agent {agent} is a tagger, and its in_game changed. Only "
                    f"runners (agents {taggers} and up) can be caught.")
        d = np.hypot(x[env, :taggers] - x[env, agent], y[env, :taggers] - y[env, agent])
        near = f"the nearest tagger is at distance {d.min():.4g}, tagging_distance is 1"
        if want_in_game[env, agent] == 0:
            nothing = (np.array_equal(num_caught, caught_before)
                       and np.array_equal(in_game_after, in_game))
            if d.min() == 1:
                hint = ("Within the tagging distance includes exactly at it: dx*dx + dy*dy <= "
                        "tagging_distance * tagging_distance.")
            elif nothing:
                hint = "A runner caught leaves the game (in_game = 0) and adds 1 to num_caught."
            else:
                hint = "Look at every tagger, agents 0 .. num_taggers - 1."
            return (f"{'Not yet: catch_runners changed nothing. ' if nothing else ''}env "
                    f"{env}, runner agent {agent} should be caught ({near}) but is still in "
                    f"the game. {hint}")
        why = ("it was already out of the game (in_game == 0): it cannot be caught again"
               if in_game[env, agent] == 0 else near)
        return f"env {env}, runner agent {agent} left the game, but {why}."
    want_count = caught_before + want.sum(axis=1, dtype=np.int32)
    wrong = np.flatnonzero(num_caught != want_count)
    if wrong.size == 0:
        return None
    overwritten = [e for e in wrong if num_caught[e] < caught_before[e]]
    env = int(overwritten[0] if overwritten else wrong[0])
    added, caught = int(num_caught[env] - caught_before[env]), int(want[env].sum())
    if overwritten:
        return (f"env {env}: num_caught is {num_caught[env]}, want {want_count[env]}: it "
                f"held {caught_before[env]} before (runners caught earlier this episode). "
                "Add 1 to it per catch; do not overwrite it.")
    if 0 <= added < caught:
        return (f"env {env}: {caught} runners were caught, but num_caught went up by only "
                f"{added}: adds were lost. {RACE}")
    return (f"env {env}: num_caught went up by {added}, but {caught} runner(s) were caught. "
            "Count each runner caught this step once, and nobody else (not a runner "
            "already out of the game, not a tagger).")
