import sys

from ait_build.cli import main

sys.exit(main())
