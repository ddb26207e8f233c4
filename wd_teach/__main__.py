"""`python -m wd_teach ...` is the `wd-teach` command; torchrun starts it with `-m wd_teach`."""

import sys

from wd_teach.cli import main

if __name__ == "__main__":  # importing the module (as tools that walk a package do) runs nothing
    sys.exit(main())
