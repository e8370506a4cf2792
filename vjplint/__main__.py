import sys

from vjplint.cli import main

sys.exit(main())
