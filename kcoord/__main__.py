import sys

from kcoord.cli import main

sys.exit(main())
