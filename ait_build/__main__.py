import sys

from ait_build.cli.main import main

sys.exit(main())
