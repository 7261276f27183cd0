import sys

from dominds.cli.main import main

sys.exit(main())
