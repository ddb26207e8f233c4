"""The errors wd_teach raises.

Every message says two things: what was wrong, and what to do about it. They are raised at
the public entry, before any GPU work starts, so a bad call never leaves half-written
device memory behind.
"""


class WdTeachError(Exception):
    """Base class: catch this to catch every wd_teach error."""


class MissingPieceError(WdTeachError, RuntimeError):
    """A GPU, a driver, nvcc or a package that this call needs is not there."""


class StoreError(WdTeachError, ValueError):
    """Bad input to the data store: a name, a shape, a dtype or the order of calls."""


class LaunchError(WdTeachError, ValueError):
    """A kernel cannot be launched as asked: unknown kernel, missing argument, wrong type."""


class CompileError(WdTeachError, RuntimeError):
    """nvcc rejected CUDA C source. The message holds nvcc's words and the source lines."""


class SamplerError(WdTeachError, ValueError):
    """Bad input to the action sampler: action counts, a seed, or probabilities of the wrong
    shape, dtype or device."""


class ProbabilityError(SamplerError):
    """Probabilities that are not probabilities: NaN or infinite, negative, or a row that does
    not sum to 1. The message names the environment, the agent and the action head."""


class ResetError(WdTeachError, ValueError):
    """A reset cannot be set up as asked: done flags of the wrong shape or dtype, or an array
    with no pristine copy to restore from."""


class LogError(WdTeachError, ValueError):
    """An episode log cannot record as asked: unknown environments or arrays, or more steps
    than it has room for."""


class EnvError(WdTeachError, ValueError):
    """An environment cannot be built or stepped as asked: a config that cannot work (no
    runners, a negative distance), or actions of the wrong shape, dtype, range or device."""


class TooLargeError(EnvError):
    """Environments that cannot be made at this size: more values in an array than kernels
    index with int, or more bytes than the GPU has free. Fewer envs or agents fit; the
    auto-scaler (wd_teach.scale.autoscale) takes it as "too many" and tries fewer."""


class ConfigError(WdTeachError, ValueError):
    """A training config that cannot work: an unknown key, a value of the wrong type, a
    policy-to-agent mapping that leaves an agent out or names one twice, batch sizes that do
    not divide. The message names the key, as it is written in the YAML (`trainer.lr`)."""


class TrainError(WdTeachError, ValueError):
    """Training cannot go on as asked: a checkpoint written for another environment or
    another set of policies, or a call in the wrong order."""


class BenchError(WdTeachError, ValueError):
    """A throughput benchmark or an auto-scaling that cannot run as asked: an unknown
    measurement, counts that are not positive, or a GPU on which not even one env fits."""


class ShowError(WdTeachError, LookupError):
    """Code a notebook shows cannot be found by its name: a CUDA C function not in the source,
    or an object with no Python source. The message lists the names that are there."""
