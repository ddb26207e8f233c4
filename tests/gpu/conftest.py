"""Everything under tests/gpu needs an NVIDIA GPU: mark it so (skipped, visibly, without one)."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.gpu)
