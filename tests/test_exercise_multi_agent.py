"""Lesson 11's checker: what a centralized critic reads, right and wrong answers."""

import torch

from wd_teach.exercises import lesson_11


def right(obs, state):
    return torch.cat([state[:, None].expand(-1, obs.shape[1], -1), obs], dim=-1)


def test_the_checker_passes_a_right_answer_and_says_so(capsys):
    verdict = lesson_11.check_critic_inputs(right)
    assert verdict and "All right" in capsys.readouterr().out
    assert "all right" in repr(verdict)


def test_the_checker_refuses_wrong_answers_with_a_reason(capsys):
    wrong = {
        "missing": None,
        "nothing returned": lambda obs, state: None,
        "raises": lambda obs, state: 1 / 0,
        "observation first": lambda obs, state: right(obs, state).roll(obs.shape[-1], -1),
        "state of env 0 for all": lambda obs, state: right(obs, state[:1].expand_as(state)),
        "obs alone": lambda obs, state: obs,
    }
    for name, answer in wrong.items():
        verdict = lesson_11.check_critic_inputs(answer)
        out = capsys.readouterr().out
        assert not verdict, name
        assert "Not yet" in out, name
        assert "not yet" in repr(verdict)
