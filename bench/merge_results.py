"""Join the JSON of several `wd-teach bench` runs on one machine into one file.

    python bench/merge_results.py all.json env.json train.json cpu.json

The rows of every run, the first run's header (device, versions), and the GPU/CPU ratios
worked out again over all rows, so a CPU baseline measured in one run serves the GPU rows
of another. Runs from different devices are refused: their numbers do not compare.
"""

import argparse
from pathlib import Path

from wd_teach.scale.bench import format_table, load_results, merge_results, write_results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the merged JSON")
    parser.add_argument("parts", type=Path, nargs="+", help="JSON files of `wd-teach bench`")
    args = parser.parse_args(argv)
    merged = merge_results([load_results(path) for path in args.parts])
    print(format_table(merged))
    print(f"\nwrote {write_results(merged, args.out)}")


if __name__ == "__main__":
    main()
