"""`python -m wd_teach ...` is the `wd-teach` command; torchrun starts it with `-m wd_teach`."""

import sys

from wd_teach.cli import main

sys.exit(main())
