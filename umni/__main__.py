import sys

from umni.cli import main

sys.exit(main())
