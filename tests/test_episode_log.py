"""The episode log: rows recorded on the device, pulled once, plotted."""

import matplotlib
import numpy as np
import pytest
import torch

from wd_teach import DataStore, EpisodeLog, LogError, plot_episode

matplotlib.use("Agg")


def make_store(length=4):
    store = DataStore(3, 2, episode_length=length)
    store.push("pos", np.zeros((3, 2, 2), np.float32), reset=True)
    store.push("steps", np.zeros(3, np.int32), per="env")
    store.push("count", np.zeros((3, 2), np.uint32))
    store.push("flag", np.zeros((3, 2), np.uint8))
    return store


def step(store, t):
    """What a step kernel would do: every array changes, differently per env."""
    store["pos"].add_(torch.arange(3, device=store.device).view(3, 1, 1) + 1)
    store["steps"].fill_(t + 1)
    store["count"].view(torch.int32).add_(2)
    store["flag"].fill_((t + 1) % 2)


def test_a_whole_episode_is_recorded_on_the_device_and_pulled_once():
    store = make_store()
    log = EpisodeLog(store, ["pos", "steps", "count", "flag"], envs=[2, 0])
    assert log.steps.device.type == store.device.type  # the counter lives on the device
    snapshots = []
    for t in range(store.episode_length + 1):
        log.record()
        snapshots.append({name: store.pull(name)[[2, 0]] for name in log.names})
        step(store, t)
    episode = log.pull()
    assert episode.steps == 5 and episode.envs == (2, 0)
    for name in log.names:
        want = np.stack([s[name] for s in snapshots])
        assert episode.arrays[name].dtype == want.dtype
        np.testing.assert_array_equal(episode.arrays[name], want, err_msg=name)
    np.testing.assert_array_equal(episode.arrays["pos"][:, 0, 0, 0], [0, 3, 6, 9, 12])


def test_too_many_records_are_reported_and_clear_starts_over():
    store = make_store(length=2)
    log = EpisodeLog(store, "steps")
    for _ in range(4):
        log.record()
    with pytest.raises(LogError, match="4 records were made into a log of 3 rows"):
        log.pull()
    log.clear()
    log.record()
    assert log.pull().steps == 1


def test_the_log_is_as_long_as_asked():
    store = make_store(length=2)
    log = EpisodeLog(store, "steps", length=10)
    for _ in range(11):
        log.record()
    assert log.pull().arrays["steps"].shape == (11, 1)


def test_plot_has_a_panel_per_array_and_env():
    store = make_store()
    log = EpisodeLog(store, ["pos", "steps"], envs=[0, 1, 2])
    for t in range(3):
        log.record()
        step(store, t)
    figure = log.pull().plot()
    assert len(figure.axes) == 6
    assert figure.axes[0].get_title() == "pos, env 0"
    assert len(figure.axes[0].lines) == 4  # 2 agents x 2 coordinates
    figure = plot_episode(log.pull(), ["pos"], max_lines=3)
    assert "first 3 of 4" in figure.axes[0].get_title()
    with pytest.raises(LogError, match="has no 'vel'"):
        plot_episode(log.pull(), ["vel"])


@pytest.mark.parametrize("names, envs, length, message", [
    ("vel", (0,), None, "no array named 'vel'"),
    ([], (0,), None, "at least one array"),
    ("table", (0,), None, "per='shared'"),
    ("pos", (3,), None, "not one of the store's 0...2"),
    ("pos", (-1,), None, "not one of"),
    ("pos", (True,), None, "not one of"),
    ("pos", (), None, "at least one environment"),
    ("pos", (0,), 0, "positive whole number"),
])
def test_bad_logs_are_refused(names, envs, length, message):
    store = make_store()
    store.push("table", np.zeros(4, np.float32), per="shared")
    with pytest.raises(LogError, match=message):
        EpisodeLog(store, names, envs, length)
