import sys

from fastdec.cli import main

sys.exit(main())
