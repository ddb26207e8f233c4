"""One check for "a number in a range", so that every refused value reads the same way.

Comparisons with NaN are always False, so `nan <= 0` lets NaN through a plain `if value <= 0`
test, and it then trains to NaN many iterations later. These helpers ask the other way
round (is it finite, is it inside?), so NaN and infinity are refused at the door.

    require_number("trainer.lr", 0.0, low=0, low_open=True)
    # ConfigError: trainer.lr must be a finite number in (0, inf), got 0.0.
"""

from __future__ import annotations

import math
import numbers

from wd_teach.errors import ConfigError

#: Seeds wd-teach takes: numpy's default_rng takes any whole number >= 0, torch.manual_seed
#: and the Philox sampler any below 2**64. Runs on several GPUs seed rank r with seed + r,
#: so seeds stay below 2**32, far from where that sum would overflow.
SEED_LIMIT = 2**32


def _bound(value) -> str:
    """A bound as a person writes it: 2**32 rather than 4294967296."""
    if isinstance(value, int) and value >= 2**16 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    return str(value)


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    """[0, 1], (0, inf) ...: the range as a learner reads it in a maths book."""
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    return (f"{left}{'-inf' if low is None else _bound(low)}, "
            f"{'inf' if high is None else _bound(high)}{right}")


def require_number(key: str, value, *, low=None, high=None, low_open: bool = False,
                   high_open: bool = False, error: type[Exception] = ConfigError) -> float:
    """`value` if it is a finite real number inside the range, else `error` naming `key`.

    `low_open`/`high_open`: whether the bound itself is left out ((0, 1] has low_open=True).
    """
    where = _interval(low, high, low_open, high_open)
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not is_real or not math.isfinite(value):
        raise error(f"{key} must be a finite number in {where}, got {value!r}.")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise error(f"{key} must be a finite number in {where}, got {value!r}.")
    return value


def require_whole(key: str, value, *, low=None, high=None,
                  error: type[Exception] = ConfigError) -> int:
    """`value` if it is a whole number in [low, high) (high left out, like range()), else
    `error` naming `key`."""
    where = _interval(low, high, False, True)
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise error(f"{key} must be a whole number in {where}, got {value!r}.")
    if (low is not None and value < low) or (high is not None and value >= high):
        raise error(f"{key} must be a whole number in {where}, got {value!r}.")
    return int(value)
