import sys

from sco.cli import main

sys.exit(main())
